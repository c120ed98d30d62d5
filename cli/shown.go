package cli

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What the command line prints for people is escaped, so that a name or text
// that a sandboxed call chose (a file name in a workspace, a command line, an
// error that quotes a path) cannot move the cursor, rewrite or hide a line, or
// change the terminal's state: a file named "README.md\r\x1b[2K..." could
// otherwise hide a changed Makefile in `ws status`. JSON output (--json) is
// exact, and a command's or JS code's own output (exec's stdout and stderr,
// js's logs and result) is its data, passed through as is.

// shown is a name (a path, a command) as printed in a table or a message:
// itself when it is valid UTF-8 made of printable characters, without a
// backslash or a double quote; otherwise Go-quoted ("a\x1bb", "\u202e"), which
// escapes controls (C0, DEL, C1), format characters such as bidirectional
// overrides, and invalid bytes, so that no two names print alike.
func shown(s string) string {
	if !utf8.ValidString(s) || strings.ContainsAny(s, `\"`) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// escapeText escapes, in place, what in a message (one or more lines) is not
// printable text: controls other than newline and tab, format characters and
// invalid bytes become \xNN or \uNNNN.
func escapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

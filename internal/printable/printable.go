// Package printable escapes text that autobox prints for people but did not
// write itself: a name a sandboxed call chose (a file in a workspace, a command
// line, a DNS name a command looked up) printed as is could move the cursor,
// rewrite or hide a line, retitle the terminal or forge one of autobox's own
// lines. The command line prints every such name through it, and so does every
// block of autobox's own text that quotes one (the network-denied block a
// failed command's stderr ends with).
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name is a name (a path, a command, a host) as printed in a table or a
// message: itself when it is valid UTF-8 made of printable characters, without
// a backslash or a double quote; otherwise Go-quoted ("a\x1bb", "\u202e"),
// which escapes controls (C0, DEL, C1), format characters such as
// bidirectional overrides, and invalid bytes, so that no two names print alike.
func Name(s string) string {
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

// Text escapes, in place, what in a message (one or more lines) is not
// printable text: controls other than newline and tab, format characters and
// invalid bytes become \xNN or \uNNNN.
func Text(s string) string { return escape(s, true) }

// Line is Text for a message that must stay on its line: newlines and tabs
// are escaped too.
func Line(s string) string { return escape(s, false) }

func escape(s string, lines bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && (r == '\n' || r == '\t') || unicode.IsPrint(r):
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

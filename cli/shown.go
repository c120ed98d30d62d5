package cli

import (
	"github.com/autobox-dev/autobox/internal/printable"
)

// What the command line prints for people is escaped, so that a name or text
// that a sandboxed call chose (a file name in a workspace, a command line, an
// error that quotes a path) cannot move the cursor, rewrite or hide a line, or
// change the terminal's state: a file named "README.md\r\x1b[2K..." could
// otherwise hide a changed Makefile in `ws status`. JSON output (--json) is
// exact, and a command's or JS code's own output (exec's stdout and stderr,
// js's logs and result) is its data, passed through as is.

// shown is a name as printed in a table or a message (printable.Name).
func shown(s string) string { return printable.Name(s) }

// escapeText escapes what in a message is not printable text (printable.Text).
func escapeText(s string) string { return printable.Text(s) }

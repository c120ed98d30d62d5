package test

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestExecOutputEncoding: a command's output reaches the client as JSON strings,
// which are UTF-8; when the bytes were not, the result says the text is lossy
// (stdoutEncoding / stderrEncoding), and valid UTF-8 says nothing. A truncation
// never splits a character of valid output.
func TestExecOutputEncoding(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	var o struct {
		Stdout, Stderr                 string
		StdoutEncoding, StderrEncoding *string
		StdoutTruncated                bool
	}
	s.call("exec_command", map[string]any{"command": bash(`printf 'a\377b'; printf 'c\300d' >&2`)}, &o)
	if o.Stdout != "a\uFFFDb" || o.Stderr != "c\uFFFDd" || o.StdoutEncoding == nil || *o.StdoutEncoding != "utf-8-lossy" || o.StderrEncoding == nil || *o.StderrEncoding != "utf-8-lossy" {
		t.Errorf("invalid UTF-8: %+v", o)
	}
	o.StdoutEncoding, o.StderrEncoding = nil, nil
	s.call("exec_command", map[string]any{"command": bash(`printf 'é✓'; printf 'ü' >&2`)}, &o)
	if o.Stdout != "é✓" || o.Stderr != "ü" || o.StdoutEncoding != nil || o.StderrEncoding != nil {
		t.Errorf("valid UTF-8: %+v", o)
	}
	// One byte, then two-byte characters past the 256 KB cut: the cut falls inside one.
	s.call("exec_command", map[string]any{"command": bash(`printf a; for i in $(seq 20); do printf '%.0sé' $(seq 8000); done`), "timeoutMs": 20000}, &o)
	text, _, _ := strings.Cut(o.Stdout, "\n[autobox: stdout truncated")
	if !o.StdoutTruncated || !utf8.ValidString(o.Stdout) || o.StdoutEncoding != nil || !strings.HasSuffix(text, "é") {
		t.Errorf("truncated valid UTF-8: truncated %v, valid %v, encoding %v, ends %q", o.StdoutTruncated, utf8.ValidString(o.Stdout), o.StdoutEncoding, text[max(0, len(text)-8):])
	}
}

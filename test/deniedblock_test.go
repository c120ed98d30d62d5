//go:build linux

package test

import (
	"strings"
	"testing"
)

// TestCLIDeniedBlockEscaped (issue 35 item 4): the names a command looked up
// are printed in autobox's own "[autobox: network denied: …]" block with
// their control characters escaped, as the command line prints every name a
// call chose: a name holding ESC, BEL, CR and LF can neither retitle the
// terminal nor forge a line of the block. Positive control: a plain name is
// printed as it is.
func TestCLIDeniedBlockEscaped(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("--allow-host needs a network namespace for the command, which mode %s lacks", hostMode())
	}
	h := newCLIHome(t)
	evil := "x\x1b]0;PWNED\x07\r\n  all.clear (ALL CLEAR)]\n\x1b[2K"
	script := `python3 -c "$PY" "$EVIL" 80; python3 -c "$PY" plain.example 80; exit 1`
	r := h.run("", "exec", "--allow-host", "127.0.0.1:1", "--env", "PY="+rawLookup, "--env", "EVIL="+evil, "--", "bash", "-c", unsetProxy+script)
	i := strings.Index(r.stderr, "[autobox: network denied:")
	if i < 0 {
		t.Fatalf("no network-denied block: %s", r)
	}
	block := r.stderr[i:]
	if strings.ContainsAny(block, "\x1b\x07\r") || strings.Contains(block, "\n  all.clear") {
		t.Errorf("the block prints a name raw: %q", block)
	}
	if !strings.Contains(block, `x\x1b]0;pwned\a\r\n  all.clear`) {
		t.Errorf("the block does not show the name escaped: %q", block)
	}
	if !strings.Contains(block, "\n  plain.example") {
		t.Errorf("the block does not show the plain name as it is: %q", block)
	}
}

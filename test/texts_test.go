//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// TestCLISpeaksFlags: the command line's help and messages name its flags as the
// README writes them (--json, --copy-mode auto), never the tools' parameter names
// or the flag package's single dash; one-letter flags keep theirs (-e).
func TestCLISpeaksFlags(t *testing.T) {
	h := newCLIHome(t)
	r := h.run("", "js", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "\n  --json\n") || !strings.Contains(r.stdout, "\n  --max-read value\n") || !strings.Contains(r.stdout, "\n  -e string\n") || strings.Contains(r.stdout, "\n  -json") {
		t.Errorf("js --help: %s", r)
	}
	h.want(h.run("", "js", "--colour", "-e", "1"), 2, "", "autobox js: flag provided but not defined: --colour\n")
	h.want(h.run("", "exec", "--timeout", "soon", "--", "true"), 2, "", `autobox exec: invalid value "soon" for flag --timeout: `)
	h.want(h.run("", "js", "--timeout", "0", "-e", "1"), 125, "", "autobox js: invalid argument: --timeout must be between 1 and 10000, got 0\n")
	h.want(h.run("", "js", "--max-write", "-1", "-e", "1"), 125, "", "autobox js: invalid argument: --max-write must be between 0 and 50000000, got -1\n")
	h.want(h.run("", "exec", "--memory", "8", "--", "true"), 125, "", "autobox exec: invalid argument: --memory must be between 16 and 2048, got 8\n")
	h.want(h.run("", "js", "--mount", "/does/not/exist:/mnt/x", "-e", "1"), 125, "", "autobox js: --mount/--workspace #1: HOST: invalid argument: /does/not/exist does not exist\n")
	h.want(h.run("", "ws", "create", "/does/not/exist", "/mnt/p"), 125, "", `autobox ws create: HOST "/does/not/exist" does not exist`+"\n")
	// A batch line speaks the tools' words: it is written in them.
	r = h.run(`{"id": 1, "tool": "exec_command", "arguments": {"command": ["true"], "timeout": 5}}`+"\n", "batch")
	if !strings.Contains(r.stdout, `unknown field \"timeout\" (exec_command takes command, timeoutMs`) {
		t.Errorf("batch with an unknown field: %s", r)
	}

	// Where cloning is impossible, the advice is the flag.
	mnt, unmount, err := xfstest.MountTmpfs(t.TempDir())
	if err != nil {
		t.Skipf("the rest needs a tmpfs: %v", err)
	}
	defer unmount()
	src := filepath.Join(mnt, "src")
	writeFile(t, filepath.Join(src, "a.txt"), "a")
	storage := filepath.Join(mnt, "storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	h.want(h.run("", "ws", "create", "--copy-mode", "clone", "--storage", storage, src, "/mnt/p"), 125, "", "or pass --copy-mode auto to allow ordinary copying\n")
}

// TestMissingHostPathNamed: a hostPath that does not exist is named as given, not by
// the first component that is missing (lstat /does).
func TestMissingHostPathNamed(t *testing.T) {
	s := start(t)
	res := s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": "/does/not/exist", "sandboxPath": "/mnt/p"})
	if got := errorOf(res); got != `invalid argument: hostPath "/does/not/exist" does not exist` && got != `hostPath "/does/not/exist" does not exist` {
		t.Errorf("create of a missing hostPath: %q", got)
	}
}

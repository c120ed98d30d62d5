//go:build linux

package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitNotes: a limit the kernel enforces as a bare error of the system
// (issue 30) gets the note the kills have: which limit, its value, what to
// raise or mount. Each beside its positive control: the same command within
// the limit, or with the mount, succeeds without a note.
func TestLimitNotes(t *testing.T) {
	requireSandbox(t)
	s := start(t)

	// One file past maxWriteMb: RLIMIT_FSIZE fails the write with EFBIG, and
	// the note names the limit. The file is the host's, already 3 MB, so the
	// command writes next to nothing: a file it wrote up to the limit itself
	// would hold all it may write, and a byte more anywhere would have the
	// watchdog kill the call at maxWriteMb instead (which names the limit
	// itself, and gets no note: TestNoteLimits).
	big := t.TempDir()
	os.Chmod(big, 0o777) // a root server without namespaces runs commands as nobody
	writeFile(t, filepath.Join(big, "f"), strings.Repeat("x", 3000000))
	os.Chmod(filepath.Join(big, "f"), 0o666)
	bigMount := []map[string]any{{"hostPath": big, "sandboxPath": "/mnt/big", "mode": "rw"}}
	o, _ := s.exec(map[string]any{"command": bash(`echo more >> /mnt/big/f; echo "status $?"`), "mounts": bigMount, "maxWriteMb": 2})
	if o.Killed || o.Stdout != "status 1\n" || !strings.Contains(o.Stderr, "File too large") || !strings.Contains(o.Stderr, `[autobox: "File too large" is maxWriteMb, 2 MB here`) || !strings.Contains(o.Stderr, "raise maxWriteMb (at most 65536)") {
		t.Errorf("a file past maxWriteMb: %+v", o)
	}
	if o, _ := s.exec(map[string]any{"command": bash(`echo more >> /mnt/big/f && wc -c < /mnt/big/f`), "mounts": bigMount, "maxWriteMb": 4}); o.code() != 0 || o.Stdout != "3000005\n" || strings.Contains(o.Stderr, "[autobox:") {
		t.Errorf("the same write within maxWriteMb: %+v", o)
	}

	// maxOpenFiles: RLIMIT_NOFILE fails an open with EMFILE.
	if _, err := exec.LookPath("python3"); err == nil {
		script := `fs = [open("/dev/null") for _ in range(100)]; print(len(fs))`
		o, _ := s.exec(map[string]any{"command": []string{"python3", "-c", script}, "maxOpenFiles": 64})
		if o.code() == 0 || !strings.Contains(o.Stderr, "Too many open files") || !strings.Contains(o.Stderr, `[autobox: "Too many open files" is maxOpenFiles, 64 here`) || !strings.Contains(o.Stderr, "raise maxOpenFiles (at most ") {
			t.Errorf("past maxOpenFiles: %+v", o)
		}
		if o, _ := s.exec(map[string]any{"command": []string{"python3", "-c", script}, "maxOpenFiles": 256}); o.code() != 0 || o.Stdout != "100\n" || strings.Contains(o.Stderr, "[autobox:") {
			t.Errorf("within maxOpenFiles: %+v", o)
		}
	} else {
		t.Log("no python3: the maxOpenFiles case is skipped")
	}

	// A host directory that exists but is not mounted: not there inside (no
	// such file, or, without a private root, permission denied).
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // a root server without namespaces runs commands as nobody
	out := filepath.Join(dir, "out.txt")
	o, _ = s.exec(map[string]any{"command": []string{"sh", "-c", "echo hi > " + out}})
	if o.code() == 0 || !strings.Contains(o.Stderr, "[autobox: "+out+" is not in this call's mounts") || !strings.Contains(o.Stderr, "this call has none") || !strings.Contains(o.Stderr, `"hostPath": "`+dir+`"`) {
		t.Errorf("a write outside the mounts: %+v", o)
	}
	rw := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/out", "mode": "rw"}}
	// By its sandboxPath, which names it in every mode (with a private root the
	// host path does not exist inside: one name for each file).
	if o, _ := s.exec(map[string]any{"command": []string{"sh", "-c", "echo hi > /mnt/out/out.txt"}, "mounts": rw}); o.code() != 0 || strings.Contains(o.Stderr, "[autobox:") {
		t.Errorf("the same write with the mount: %+v", o)
	}
	if b, _ := os.ReadFile(out); string(b) != "hi\n" {
		t.Errorf("the mounted write left %q", b)
	}
	// A file missing in a mount is just missing: no note.
	if o, _ := s.exec(map[string]any{"command": []string{"cat", "/mnt/out/nope"}, "mounts": rw}); o.code() == 0 || strings.Contains(o.Stderr, "[autobox:") {
		t.Errorf("a missing file in a mount: %+v", o)
	}
	// A write in a read-only mount: where the kernel says so (a private root's
	// read-only bind), the note names the mount and mode.
	ro := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/out", "mode": "ro"}}
	o, _ = s.exec(map[string]any{"command": []string{"touch", "/mnt/out/new"}, "mounts": ro})
	if o.code() == 0 {
		t.Errorf("a write in a read-only mount succeeded: %+v", o)
	} else if strings.Contains(o.Stderr, "Read-only file system") && !strings.Contains(o.Stderr, `(mount /mnt/out) is in a read-only mount (mode "ro"): mount it with mode "rw"`) {
		t.Errorf("a write in a read-only mount: %+v", o)
	}
}

// TestJSNodeHints: Node's globals that a bare isolate lacks get a hint of what
// it has instead; standard JavaScript runs.
func TestJSNodeHints(t *testing.T) {
	s := start(t)
	for _, code := range []string{`require("fs").readFileSync("/etc/hostname")`, `process.env.HOME`, `Buffer.from("x")`} {
		o, _ := s.js(map[string]any{"code": code})
		if o.OK || !strings.Contains(o.err(), "is not defined (execute_js runs standard JavaScript in a bare V8 isolate") || !strings.Contains(o.err(), "host.readFile") || !strings.Contains(o.err(), `call exec_command with ["node", …]`) {
			t.Errorf("%s: %q", code, o.err())
		}
	}
	if o, _ := s.js(map[string]any{"code": `[1, 2, 3].map((x) => x * 2).join(",")`}); !o.OK || string(o.Result) != `"2,4,6"` {
		t.Errorf("standard JavaScript: %+v", o)
	}
}

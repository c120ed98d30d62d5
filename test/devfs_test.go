package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnDev: with a root of its own a command has a /dev/shm, a /run and
// terminals of its own: another call does not see them, the host does not
// get them, and what /dev/shm holds counts as the call's memory.
func TestOwnDev(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("without a private root there is no /dev/shm, /run or devpts of the call's own (docs/modes.md: what a command sees)")
	}
	s := start(t)
	name := fmt.Sprintf("autobox-test-%d", os.Getpid())
	// A session holds a file in its /dev/shm and /run.
	o := s.startSession(map[string]any{"command": bash("echo x > /dev/shm/" + name + " && echo y > /run/" + name + " && echo held && sleep 30"), "timeoutMs": 30000})
	if out, _ := s.until(o.SessionID, "held", o.Stdout); !strings.Contains(out, "held") {
		t.Fatalf("the session did not write its files: %q", out)
	}
	// Positive control: the same names in this call's own.
	if o, _ := s.exec(map[string]any{"command": bash("ls /dev/shm /run; echo z > /dev/shm/mine && cat /dev/shm/mine"), "timeoutMs": 30000}); strings.Contains(o.Stdout, name) || !strings.HasSuffix(o.Stdout, "z\n") {
		t.Errorf("another call's /dev/shm and /run: %+v", o)
	}
	for _, dir := range []string{"/dev/shm", "/run"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a call's file reached the host's %s", dir)
		}
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})

	// Terminals: the call opens its own; the host's are not there.
	if o, _ := s.exec(map[string]any{"command": bash(`exec 3<>/dev/ptmx && ls /dev/pts | tr '\n' ' '`), "timeoutMs": 30000}); o.code() != 0 || strings.TrimSpace(o.Stdout) != "0 ptmx" {
		t.Errorf("/dev/pts with one terminal of the call's open: want \"0 ptmx\", got %+v", o)
	}
	// XDG_RUNTIME_DIR: the user's own, private.
	if o, _ := s.exec(map[string]any{"command": bash(`stat -c %a:%u "$XDG_RUNTIME_DIR"; id -u; echo "$TMPDIR"`), "timeoutMs": 30000}); o.code() != 0 || !strings.HasPrefix(o.Stdout, "700:") || !strings.HasSuffix(o.Stdout, "/tmp\n") {
		t.Errorf("XDG_RUNTIME_DIR and TMPDIR: %+v", o)
	} else if f := strings.Fields(o.Stdout); strings.TrimPrefix(f[0], "700:") != f[1] {
		t.Errorf("XDG_RUNTIME_DIR is not the command's own: %+v", o)
	}
}

// TestShmCountsAsMemory: what a command puts in its /dev/shm counts against
// memoryMb, in every namespaced mode (a memory cgroup charges it; without one
// the launcher reports it to the watchdog).
func TestShmCountsAsMemory(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("no /dev/shm of the call's own without a private root")
	}
	s := start(t)
	// Positive control: within the limit.
	if o, _ := s.exec(map[string]any{"command": bash("head -c 16M /dev/zero > /dev/shm/f && echo ok"), "memoryMb": 128, "timeoutMs": 20000}); o.Stdout != "ok\n" || o.Killed {
		t.Errorf("16 MB in /dev/shm under memoryMb 128: %+v", o)
	}
	o, _ := s.exec(map[string]any{"command": bash("head -c 400M /dev/zero > /dev/shm/f; echo wrote $?; sleep 10"), "memoryMb": 128, "timeoutMs": 30000})
	if !o.Killed || !strings.Contains(o.Stderr, "memory limit exceeded") {
		t.Errorf("400 MB in /dev/shm under memoryMb 128: want a memory kill, got %+v", o)
	}
}

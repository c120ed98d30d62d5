package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitChild returns the pid of pid's first child, once it has one.
func waitChild(t *testing.T, pid int) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.Atoi(f[0])
			return n
		}
	}
	t.Fatalf("process %d started no child", pid)
	return 0
}

// TestSandboxedPeer: a process whose ancestor is an autobox launcher (its
// command line `autobox worker exec`) is refused however it looks itself; the
// test process, and a child of it, are not (the positive control).
func TestSandboxedPeer(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if why := sandboxedPeer(os.Getpid(), self); why != "" {
		t.Fatalf("the test process is taken for a sandboxed one: %s", why)
	}
	// A shell whose command line reads "<self> worker exec": it runs the
	// script named worker, and its child sleep is the peer.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "worker"), []byte("sleep 30 & wait\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		argv0 string
		role  string
		want  bool
	}{
		{self, "exec", true},
		{"/usr/local/bin/autobox", "js", true},
		{self, "serve", false},
		{"/bin/sh", "exec", false},
	} {
		cmd := &exec.Cmd{Path: "/bin/sh", Args: []string{c.argv0, "worker", c.role}, Dir: dir}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		peer := waitChild(t, cmd.Process.Pid)
		why := sandboxedPeer(peer, self)
		if (why != "") != c.want {
			t.Errorf("a child of %q worker %s: refused %v (%q), want %v", c.argv0, c.role, why != "", why, c.want)
		}
		syscall.Kill(peer, syscall.SIGKILL)
		cmd.Process.Kill()
		cmd.Wait()
	}
	if why := sandboxedPeer(1<<30, self); why == "" {
		t.Errorf("a process that does not exist is not refused")
	}

	// The marks of a sandboxed command itself: no_new_privs and an empty
	// bounding set (dropping it needs CAP_SETPCAP).
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot empty a bounding set to make a marked process")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv is not installed")
	}
	cmd := exec.Command("setpriv", "--no-new-privs", "--bounding-set=-all", "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var why string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.HasPrefix(strings.Join(cmdline(cmd.Process.Pid), " "), "sleep") {
			why = sandboxedPeer(cmd.Process.Pid, self)
			break
		}
	}
	if !strings.Contains(why, "no_new_privs") {
		t.Errorf("a process with no_new_privs and no bounding set: %q", why)
	}
}

//go:build linux

package test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTransientNamespaceErrorFailsCall (issue 35 item 8): a fork that makes a
// launcher's pid (or user) namespace and fails with EAGAIN, as one does while
// a fork bomb next door holds a process count or a pids cgroup full, fails
// that call, saying why, and never takes the server to a weaker mode: before,
// any such error as root made "pid namespaces refused" for the server's whole
// life, and every later command ran in landlock-only mode (as an ordinary
// user, the probe's error did the same). Here a seccomp filter gives the
// server EAGAIN for every such fork. The JS workers' namespaces, made once at
// start, are tried again a few times and then fail the start. Positive control: the same call on a
// server without the filter runs in the host's mode.
func TestTransientNamespaceErrorFailsCall(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("mode %s makes no namespaces to fail", hostMode())
	}
	probe := filepath.Join(toolsDir, "probe")
	s := startArgv(t, nil, []string{probe, "nsagain", bin})
	for i := 0; i < 3; i++ {
		var o map[string]any
		isErr := s.call("exec_command", map[string]any{"command": []string{"echo", "ran"}}, &o)
		msg := fmt.Sprint(o["error"])
		if o["isolation"] == "landlock-only" || o["stdout"] == "ran\n" || !isErr ||
			!strings.Contains(msg, "resource temporarily unavailable") || !strings.Contains(msg, "nothing weaker ran in its place") {
			t.Errorf("call %d under EAGAIN: %v", i, o)
		}
	}
	// The mode the server's doctor reports stays the host's.
	h := newCLIHome(t)
	cmd := exec.Command(probe, "nsagain", bin, "doctor")
	cmd.Env = h.env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "mode              "+hostMode()) {
		t.Errorf("doctor under EAGAIN does not report mode %s:\n%s", hostMode(), out)
	}
	// The JS workers' own namespaces (user and pid): a server that cannot make
	// them for the moment does not start, saying why, rather than start its
	// workers in a weaker jail.
	cmd = exec.Command(probe, "nsagain-worker", bin, "js", "-e", "1 + 1")
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "2\n") || !strings.Contains(string(out), "making a JS worker's namespaces: resource temporarily unavailable") {
		t.Errorf("autobox js under EAGAIN for its workers' namespaces (%v):\n%s", err, out)
	}
	// Positive control (not h.run: the server above still runs, which its
	// check for leftovers would take for one).
	cmd = exec.Command(bin, "js", "-e", "1 + 1")
	cmd.Env = h.env
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "2\n" {
		t.Errorf("autobox js (%v):\n%s", err, out)
	}
	s2 := start(t)
	var o map[string]any
	if s2.call("exec_command", map[string]any{"command": []string{"echo", "ran"}}, &o); o["stdout"] != "ran\n" || o["isolation"] != hostMode() {
		t.Errorf("without the filter: %v", o)
	}
}

package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// TestOneCommandServer: the server of `autobox exec` (no workers kept, one
// command) starts its command's launcher with itself, before any call, and no
// JS worker; an execute_js call still gets one, made when it comes; Close
// leaves no process of either. The positive control, a server that keeps one
// worker warm, has one before any call.
func TestOneCommandServer(t *testing.T) {
	if err := jail.Probe().Check(&policy.Sandbox{}); err != nil {
		t.Skipf("host cannot sandbox commands: %v", err)
	}
	warm := newTestServer(t, true)
	if n := waitChildren(t, "js", 1); n != 1 {
		t.Errorf("a server keeping one worker warm has %d JS workers", n)
	}
	warm.Close()
	if n := waitChildren(t, "js", 0); n != 0 {
		t.Fatalf("%d JS workers left after Close", n)
	}

	s, err := New(Options{Exe: testBin, PoolSize: -1, Launchers: -1, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := waitChildren(t, "exec", 1); n != 1 {
		t.Errorf("before any call: %d launchers, want the one command's", n)
	}
	if n := children(t, "js"); n != 0 {
		t.Errorf("before any call: %d JS workers, want none", n)
	}
	out, err := s.ExecCommand(context.Background(), &ExecInput{Command: []string{"echo", "hi"}})
	if err != nil || out.ExitCode == nil || *out.ExitCode != 0 || out.Stdout != "hi\n" {
		t.Fatalf("exec_command: %+v, %v", out, err)
	}
	js, err := s.ExecuteJS(context.Background(), &JSInput{Code: "6 * 7"})
	if err != nil || js.Error != nil || fmt.Sprintf("%s", js.Result) != "42" {
		t.Fatalf("execute_js: %+v, %v", js, err)
	}
	s.Close()
	if n, m := waitChildren(t, "exec", 0), waitChildren(t, "js", 0); n != 0 || m != 0 {
		t.Errorf("after Close: %d launchers and %d JS workers left", n, m)
	}
	if _, err := s.ExecuteJS(context.Background(), &JSInput{Code: "1"}); err == nil {
		t.Error("execute_js after Close: no error")
	}
}

// children counts this process's children of an `autobox worker ROLE`.
func children(t *testing.T, role string) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if strings.Contains(string(cmd), "\x00worker\x00"+role+"\x00") {
				n++
			}
		}
	}
	return n
}

// waitChildren waits up to 30 s for children(role) to be want, and returns
// the last count.
func waitChildren(t *testing.T, role string, want int) int {
	t.Helper()
	n := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n = children(t, role); n == want {
			break
		}
	}
	return n
}

// TestOneCommandServerRefused: a one-command server that cannot open (its
// state dir is a file) says why, and ends the launcher it had started.
func TestOneCommandServerRefused(t *testing.T) {
	if err := jail.Probe().Check(&policy.Sandbox{}); err != nil {
		t.Skipf("host cannot sandbox commands: %v", err)
	}
	file := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Exe: testBin, PoolSize: -1, Launchers: -1, StateDir: file})
	if err == nil {
		s.Close()
		t.Fatal("a state dir that is a file: no error")
	}
	if n := waitChildren(t, "exec", 0); n != 0 {
		t.Errorf("%d launchers left after the refusal (%v)", n, err)
	}
	// Positive control: the same server with a state dir opens.
	s, err = New(Options{Exe: testBin, PoolSize: -1, Launchers: -1, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

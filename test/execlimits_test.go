// exec_command's limits: memory (the RSS watchdog and the memory cgroup),
// output floods and the timeout.

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExecLimits(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	// Memory: a hog is killed, and the message says by what: the RSS watchdog,
	// or (where there is a memory cgroup) the kernel's limit, which comes
	// first when a loaded machine delays the watchdog's 10 ms poll while the
	// hog allocates 200 MB. The same program within budget runs.
	o := s.probe(nil, map[string]any{"memoryMb": 64, "timeoutMs": 10000}, "hog", "200")
	if !o.Killed || !strings.HasPrefix(o.Stderr, "memory limit exceeded") || !strings.Contains(o.Stderr, "RSS watchdog") && !strings.Contains(o.Stderr, "the kernel's cgroup limit of memoryMb 64; killed by the OOM killer") {
		t.Errorf("memory hog: %+v", o)
	}
	o = s.probe(nil, map[string]any{"memoryMb": 128, "timeoutMs": 10000, "command": []string{"/mnt/tools/probe", "hog", "20"}}, "hog", "20")
	if o.Killed || !strings.Contains(o.Stdout, "ok allocated 20 MB") {
		t.Errorf("within budget: %+v", o)
	}
	// Output floods are truncated at 256 KB / 64 KB and say so.
	o, _ = s.exec(map[string]any{"command": bash("head -c 5000000 /dev/zero | tr '\\0' x; head -c 1000000 /dev/zero | tr '\\0' y >&2")})
	if !o.StdoutTruncated || !o.StderrTruncated || !strings.Contains(o.Stdout, "stdout truncated at 262144 bytes") || len(o.Stdout) > 262144+100 || len(o.Stderr) > 65536+100 {
		t.Errorf("flood: stdout %d bytes (truncated %v), stderr %d bytes (truncated %v)", len(o.Stdout), o.StdoutTruncated, len(o.Stderr), o.StderrTruncated)
	}
	if o.code() != 0 {
		t.Errorf("flood exit code %d", o.code())
	}
	// Timeout.
	o, isErr := s.exec(map[string]any{"command": []string{"sleep", "10"}, "timeoutMs": 200})
	if !isErr || !o.Killed || o.code() == 0 {
		t.Errorf("timeout: isError=%v %+v", isErr, o)
	}
}

// TestExecMemoryCgroup: where the host lets autobox make cgroups (root on this CI), each
// command tree runs in a memory cgroup of its own with a hard kernel limit of memoryMb
// (plus the launcher's slack), removed after the call. Idle launchers get the limit of
// the last call ahead of time; a call with another limit still gets its own.
func TestExecMemoryCgroup(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("creating memory cgroups needs root or a delegated cgroup v2 subtree")
	}
	s := start(t)
	for i, mb := range []int{100, 100, 100, 64, 100} {
		dir := t.TempDir()
		done := make(chan execOut, 1)
		// The command's cgroups as the host names them: the command's own
		// /proc/self/cgroup names them "/", the roots of its view.
		marker := fmt.Sprintf("autobox-memcg-test-%d-%d", os.Getpid(), i)
		go func() {
			// It runs until the test has read its cgroup's limit (the gate).
			o, _ := s.exec(map[string]any{"command": bash("echo started > /mnt/d/cg; until [ -e /mnt/d/gate ]; do sleep 0.01; done; : " + marker), "memoryMb": mb, "timeoutMs": 600000,
				"mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}})
			done <- o
		}()
		// The command says it started first thing: wait for that, or for its
		// end (a command that could not start), however long it takes.
		var line string
		var early *execOut
		for line == "" && early == nil {
			select {
			case o := <-done:
				early = &o
			case <-time.After(20 * time.Millisecond):
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "cg")); len(b) > 0 {
				line = hostCgroupsOf(t, marker)
			}
		}
		if line == "" {
			t.Fatalf("call %d ended without saying its cgroup: %+v", i, *early)
		}
		open := func() { // the gate: the command ends
			if early == nil {
				writeFile(t, filepath.Join(dir, "gate"), "")
			}
		}
		for _, l := range strings.Split(line, "\n") {
			if strings.Contains(l, "/autobox-") && (strings.Contains(l, ":memory:") || strings.HasPrefix(l, "0::")) {
				line = l
			}
		}
		if !strings.Contains(line, "/autobox-") {
			open()
			if early == nil {
				<-done
			}
			t.Skipf("the command is not in an autobox cgroup (%q): this host offers none to autobox", line)
		}
		parts := strings.SplitN(line, ":", 3)
		base := "/sys/fs/cgroup/memory"
		limitFile := "memory.limit_in_bytes"
		if parts[0] == "0" {
			base, limitFile = "/sys/fs/cgroup", "memory.max"
		}
		cg := filepath.Join(base, parts[2])
		b, err := os.ReadFile(filepath.Join(cg, limitFile))
		open()
		if err != nil {
			t.Fatalf("call %d: reading the limit of %s: %v", i, cg, err)
		}
		if got, want := strings.TrimSpace(string(b)), fmt.Sprint(mb<<20+32<<20); got != want {
			t.Errorf("call %d (memoryMb %d): cgroup limit %s, want %s", i, mb, got, want)
		}
		o := early
		if o == nil {
			r := <-done
			o = &r
		}
		if o.code() != 0 {
			t.Errorf("call %d: command: %+v", i, *o)
		}
		// Removed just after the call answers; a loaded machine may take a while.
		gone := false
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !gone; time.Sleep(50 * time.Millisecond) {
			_, err := os.Stat(cg)
			gone = os.IsNotExist(err)
		}
		if !gone {
			t.Errorf("call %d: cgroup %s still exists after the call", i, cg)
		}
	}
}

// hostCgroupsOf is /proc/PID/cgroup, as this process sees it, of the process
// whose command line holds marker; "" if there is none.
func hostCgroupsOf(t *testing.T, marker string) string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
			if cg, err := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup")); err == nil {
				return strings.TrimSpace(string(cg))
			}
		}
	}
	t.Fatalf("no process runs %s", marker)
	return ""
}

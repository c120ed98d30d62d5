package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSweepSparesAnotherPidNamespace: an autobox process started in a pid
// namespace of its own (here `unshare --pid --fork`, as in a container that
// shares the host's cgroups) sweeps only the cgroups made in its namespace. It
// sees none of the host's processes: judged by pid, the cgroups of a server
// running beside it all looked stale, and an empty one (a launcher's, made and
// not yet joined) was removed under it, so that a call failed ("pids.max: no
// such device", seen in a busy run beside TestLauncherFallbackMemfdNoexec).
// The victims here: an empty cgroup named as this test process's (it runs, in
// the host's namespace), and the cgroups of a server with idle launchers, whose
// next calls run. The positive control: a stale cgroup named as made in that
// namespace, by a pid that does not run there, is swept by the same process.
func TestSweepSparesAnotherPidNamespace(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("a pid namespace of its own, sharing this host's cgroups, needs root (unshare --pid)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	s := start(t)
	call := func(when string) {
		if o, isErr := s.exec(map[string]any{"command": []string{"echo", "hi"}}); isErr || o.Stdout != "hi\n" {
			t.Fatalf("exec_command %s: %+v", when, o)
		}
	}
	call("before the sweep")
	pid := s.cmd.Process.Pid
	// The pool refills after the call: wait until its idle launchers' cgroups
	// stay as they are.
	var before []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		time.Sleep(300 * time.Millisecond)
		now := callCgroups(pid)
		if len(now) > 0 && slices.Equal(now, before) {
			break
		}
		if time.Now().After(deadline) {
			if len(now) == 0 {
				t.Skip("this process's server makes no cgroups here")
			}
			t.Fatalf("the server's cgroups still change after 30 s: %v", now)
		}
		before = now
	}
	// The control goes where the server's first cgroup is.
	base := filepath.Dir(strings.TrimPrefix(before[0], "cgroup "))
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/pid", &st); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(base, fmt.Sprintf("autobox-p%d-n%d-victim", os.Getpid(), st.Ino))
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(victim) })
	control := "autobox-p424242-n$(stat -L -c %i /proc/self/ns/pid)-control"
	home := t.TempDir()
	sweep := exec.Command(unshare, "--pid", "--fork", "/bin/sh", "-c",
		fmt.Sprintf(`mkdir "%s/%s" && exec "$0" doctor`, base, control), bin)
	sweep.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state")}
	out, err := sweep.CombinedOutput()
	if err != nil {
		t.Fatalf("doctor in a pid namespace of its own: %v\n%s", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(base, "autobox-p424242-n*-control")); len(left) > 0 {
		for _, d := range left {
			os.Remove(d)
		}
		t.Fatalf("the sweep in the namespace left %v, a stale cgroup of its own namespace: the test checks nothing", left)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a sweep in another pid namespace removed %s, named as made by a process that runs: %v", victim, err)
	}
	for _, c := range before {
		if _, err := os.Stat(strings.TrimPrefix(c, "cgroup ")); err != nil {
			t.Errorf("a sweep in another pid namespace removed the server's %s", c)
		}
	}
	for i := range 3 {
		call(fmt.Sprintf("%d after the sweep", i+1))
	}
}

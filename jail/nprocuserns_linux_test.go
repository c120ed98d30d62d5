package jail

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// TestUserNSNprocExact: in a user-namespace launcher without a pids cgroup,
// where RLIMIT_NPROC counts the launcher's threads with the command's
// processes, the launcher makes no thread once its command runs, so the
// command has exactly maxProcesses: once the launcher's command thread is
// gone, the room it leaves (ProcessCeiling) is maxProcesses and stays so, the
// command's 9 forks under maxProcesses 10 succeed (the positive control) and
// its 10th is refused with EAGAIN. Its Go runtime made a thread or two after
// the fork in nearly half the starts of a loaded machine, which took a
// process from the command (a tree of maxProcesses less one was refused a
// fork); so the starts here run beside a CPU burner per core.
func TestUserNSNprocExact(t *testing.T) {
	requireJail(t)
	switch {
	case os.Getuid() == 0:
		t.Skip("root's commands have a pids cgroup, or run as an unprivileged uid only in the end-to-end tests")
	case launcherMode() != nsUser:
		t.Skip("launchers get no user namespace here: RLIMIT_NPROC counts the user's tasks (TestHostNproc)")
	case !confine.NprocPerUserNS():
		t.Skip("before Linux 5.14 RLIMIT_NPROC counts every task of the user")
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed: the fork probe is a perl one-liner")
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range runtime.NumCPU() {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	const limit = 10
	// The command waits for the gate file, then forks 10 children that wait
	// for its end, and says which fork failed and why.
	script := `$| = 1; until (-e $ARGV[0]) { select(undef, undef, undef, 0.005) } pipe(R, W); for $i (1..10) { my $p = fork; if (!defined $p) { print "fork $i: $!\n"; exit 3 } if ($p == 0) { close W; <R>; exit } } print "forked 10\n"`
	for i := range 5 {
		dir := t.TempDir()
		gate := filepath.Join(dir, "go")
		sb := basePolicy(t)
		sb.ReadOnly = append(sb.ReadOnly, "/proc", dir)
		out := tempFile(t)
		tree, err := Start(testExe(t), &Spec{Argv: []string{perl, "-e", script, gate}, Sandbox: sb, Limits: &policy.Limits{Processes: limit, WriteBytes: -1}}, out, out)
		if err != nil {
			t.Fatal(err)
		}
		if !tree.nproc {
			tree.Kill()
			_, _ = tree.Wait()
			t.Skip("commands have a pids cgroup here")
		}
		// Once the command thread is gone, the room is the limit; a thread
		// made after the fork would keep it below.
		room := 0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if room = tree.ProcessCeiling(); room == limit {
				break
			}
		}
		writeFile(t, gate, "")
		res, err := tree.Wait()
		got := readBack(t, out)
		if err != nil || !res.Started {
			t.Fatalf("start %d: %+v, %v\n%s", i, res, err, got)
		}
		if room != limit {
			t.Errorf("start %d: the launcher left its command room for %d tasks 10 s after the start, want maxProcesses %d (it has %d threads more than at the fork, less its command thread)", i, room, limit, limit-room)
		}
		if got != "fork 10: Resource temporarily unavailable\n" || res.ExitCode != 3 {
			t.Errorf("start %d: 10 forks under maxProcesses %d: want the 10th refused (EAGAIN), got exit %d:\n%s", i, limit, res.ExitCode, got)
		}
	}
}

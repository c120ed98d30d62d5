package jail

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// totalTasks is every task on the machine, from /proc/loadavg ("0.1 0.2 0.3 2/345 678").
func totalTasks(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	_, total, _ := strings.Cut(f[3], "/")
	n, err := strconv.Atoi(total)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHostNproc (issue 32, item 6): without namespaces and without a pids
// cgroup, an ordinary user's command gets RLIMIT_NPROC at the user's tasks
// plus maxProcesses plus the margin, soft and hard, so the kernel refuses a
// fork bomb's forks however late the watchdog (not running here) looks; and
// the tree reports its refusals as uncounted. The control: a command that
// forks fewer than maxProcesses children is refused nothing.
func TestHostNproc(t *testing.T) {
	requireJail(t)
	if os.Getuid() == 0 {
		t.Skip("root's commands have a pids cgroup here, or run as an unprivileged uid only in the end-to-end tests (dropRoot)")
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed: the fork probe is a perl one-liner")
	}
	saved := namespacesOff
	namespacesOff = true
	defer func() { namespacesOff = saved }()
	sb := basePolicy(t)
	sb.ReadOnly = append(sb.ReadOnly, "/proc")
	run := func(l *policy.Limits, script string) (string, *Tree) {
		t.Helper()
		out := tempFile(t)
		tree, err := Start(testExe(t), &Spec{Argv: []string{perl, "-e", script}, Sandbox: sb, Limits: l}, out, out)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tree.Wait()
		if err != nil || !res.Started {
			t.Fatalf("%+v, %v", res, err)
		}
		return readBack(t, out), tree
	}
	// forks forks n children that sleep until the parent ends (a pipe they
	// read), and says which fork failed and why.
	forks := func(n int) string {
		return `$| = 1; pipe(R, W); for $i (1..` + strconv.Itoa(n) + `) { my $p = fork; if (!defined $p) { print "fork $i: $!\n"; exit 3 } if ($p == 0) { close W; <R>; exit } } print "forked ` + strconv.Itoa(n) + `\n"`
	}

	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &cur) != nil || cur.Max < uint64(totalTasks(t)+2000) {
		t.Skipf("this user's hard RLIMIT_NPROC (%d) is about the machine's tasks already", cur.Max)
	}
	got, tree := run(&policy.Limits{Processes: 30, WriteBytes: -1}, `open(L, "/proc/self/limits") or die "open: $!"; while (<L>) { print if /^Max processes/ }`)
	f := strings.Fields(strings.TrimPrefix(got, "Max processes"))
	if len(f) < 2 {
		t.Fatalf("limits: %q", got)
	}
	soft, err1 := strconv.Atoi(f[0])
	hard, err2 := strconv.Atoi(f[1])
	// At least maxProcesses and the margin above the user's tasks (one at
	// least: the launcher), at most every task of the machine (with room for
	// other tests of this user) and twice the margin above.
	low, high := 1+30+wire.HostNprocMargin, totalTasks(t)+30+2*wire.HostNprocMargin+1000
	if err1 != nil || err2 != nil || soft != hard || soft < low || soft > high {
		t.Fatalf("RLIMIT_NPROC %q: want soft and hard between %d and %d (maxProcesses 30, the margin %d)", got, low, high, wire.HostNprocMargin)
	}
	if n := tree.ForksRefused(); n != -1 {
		t.Errorf("ForksRefused %d: want -1 (refused by RLIMIT_NPROC, uncounted)", n)
	}
	if c := tree.ProcessCeiling(); c != 30 {
		t.Errorf("ProcessCeiling %d: want maxProcesses, 30", c)
	}
	if h := int(hostTasksHint.Load()); h != soft-30-wire.HostNprocMargin {
		t.Errorf("the count kept for the next launcher: %d, want %d", h, soft-30-wire.HostNprocMargin)
	}

	// The kernel refuses what the watchdog would have to catch: far more
	// children than maxProcesses and the margin.
	if got, _ := run(&policy.Limits{Processes: 10, WriteBytes: -1}, forks(2000)); !strings.Contains(got, ": Resource temporarily unavailable") {
		t.Errorf("2000 forks under maxProcesses 10: want a fork refused with EAGAIN, got %q", got)
	}
	// Control: under the limit, nothing is refused.
	if got, _ := run(&policy.Limits{Processes: 30, WriteBytes: -1}, forks(25)); got != "forked 25\n" {
		t.Errorf("25 forks under maxProcesses 30: %q", got)
	}
}

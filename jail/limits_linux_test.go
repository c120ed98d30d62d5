package jail

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// TestLimits: a command's rlimits are set, soft and hard, before its fork
// (SIGXFSZ ignored, so a write past the file size limit fails with EFBIG); where
// this process may make cgroups its tree, not its launcher, is in a pids cgroup
// whose limit is Processes; the exit frame carries what the tree used.
func TestLimits(t *testing.T) {
	requireJail(t)
	pool := NewPool(testExe(t), 1, nil)
	defer pool.Close()
	l := &policy.Limits{Processes: 5, WriteBytes: 3000, CPU: 1500 * time.Millisecond, OpenFiles: 64}
	dir := t.TempDir()
	sb := basePolicy(t)
	sb.ReadWrite = []string{dir}
	sb.ReadOnly = append(sb.ReadOnly, "/proc")
	sb.Devices = append(sb.Devices, "/dev/zero")
	script := `ulimit -Sn; ulimit -Hn; ulimit -St; ulimit -Ht; ulimit -Sf; ulimit -Hf
dd if=/dev/zero of=` + dir + `/f bs=1000 count=4 2>/dev/null; echo dd=$?
grep -E ':(pids|cpu):' /proc/self/cgroup | sed 's/autobox-.*/own/'
i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done
(for i in 1 2 3 4 5 6; do sleep 0.3 & done; wait) 2>&1; echo forked=$?`
	out := tempFile(t)
	tree, err := pool.Start(&Spec{Argv: []string{"/bin/sh", "-c", script}, Sandbox: sb, Limits: l}, out, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tree.Wait()
	got := readBack(t, out)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v, %v\n%s", res, err, got)
	}
	// dash counts file sizes in 512-byte blocks.
	want := "64\n64\n2\n3\n5\n5\ndd=1\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("rlimits and EFBIG: got\n%s\nwant it to start with\n%s", got, want)
	}
	if fi, err := os.Stat(dir + "/f"); err != nil || fi.Size() != 3000 {
		t.Errorf("the file written up to RLIMIT_FSIZE: %v %v\n%s", fi, err, got)
	}
	if Isolations().ProcessCgroups {
		if !strings.Contains(got, ":pids:/own\n") || !strings.Contains(got, ":cpu:/own\n") || !strings.Contains(got, "Cannot fork") || !strings.Contains(got, "forked=2") {
			t.Errorf("a command in its own pids and cpu cgroups, its forks past 5 refused:\n%s", got)
		}
		if n := tree.ForksRefused(); n == 0 {
			t.Errorf("ForksRefused after refused forks: %d", n)
		}
	}
	u := tree.Usage()
	// Written counts pages as they are dirtied, once per write that found its
	// page clean: dd's file's one page, up to 3 times, and the output file's
	// (this test's stdout is a file), once per line at most when the machine
	// writes back between them.
	lines := strings.Count(got, "\n")
	if u.CPU < 20*time.Millisecond || u.Written < 3000 || u.Written > int64(3+lines)*4096 || (Isolations().ProcessCgroups && u.Processes != 5) {
		t.Errorf("usage %+v: want the shell's CPU time, a page written up to 3 times and the output's, 5 processes at most\n%s", u, got)
	}
}

// TestLauncherNotInCommandCgroups: the launcher's own threads stay out of the
// command's pids cgroup (a Go runtime that cannot make a thread dies).
func TestLauncherNotInCommandCgroups(t *testing.T) {
	requireJail(t)
	if !Isolations().ProcessCgroups {
		t.Skip("no pids cgroups for commands here (root on cgroup v1)")
	}
	pool := NewPool(testExe(t), 1, nil)
	defer pool.Close()
	out := tempFile(t)
	tree, err := pool.Start(&Spec{Argv: []string{"/bin/sleep", "0.5"}, Sandbox: basePolicy(t), Limits: &policy.Limits{Processes: 1}}, out, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	launcher, _ := os.ReadFile("/proc/" + strconv.Itoa(tree.Pid()) + "/cgroup")
	if strings.Contains(string(launcher), ":pids:/autobox-") {
		t.Errorf("the launcher is in a command's pids cgroup:\n%s", launcher)
	}
	if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("a command under Processes 1: %+v, %v", res, err)
	}
}

// TestMemoryCgroupHoldsCommandOnly: on cgroup v1 the command is born in its
// memory cgroup, which its launcher's command thread joined by itself (no
// process move, whose grace period `autobox exec` would wait out); the
// launcher stays out of it. The command's place in it is the positive control.
func TestMemoryCgroupHoldsCommandOnly(t *testing.T) {
	requireJail(t)
	if cg := probeCgroups(); cg == nil || cg.v2 {
		t.Skip("no cgroup v1 memory cgroups for commands here (root on cgroup v1)")
	}
	pool := NewPool(testExe(t), 1, nil)
	defer pool.Close()
	out := tempFile(t)
	tree, err := pool.Start(&Spec{Argv: []string{"/bin/sleep", "1"}, Sandbox: basePolicy(t)}, out, out, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	memoryLine := func(pid int) string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, ":memory:") {
				return l
			}
		}
		return ""
	}
	var command int
	for deadline := time.Now().Add(20 * time.Second); command == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		kids, _ := filepath.Glob("/proc/" + strconv.Itoa(tree.Pid()) + "/task/*/children")
		for _, k := range kids {
			b, _ := os.ReadFile(k)
			if f := strings.Fields(string(b)); len(f) > 0 {
				command, _ = strconv.Atoi(f[0])
			}
		}
	}
	if command == 0 {
		t.Fatal("the command was not seen running")
	}
	if l := memoryLine(command); !strings.Contains(l, ":memory:") || !strings.Contains(l, "/"+wire.CgroupPrefix) {
		t.Errorf("the command is not in a memory cgroup of autobox's: %q", l)
	}
	if l := memoryLine(tree.Pid()); strings.Contains(l, "/"+wire.CgroupPrefix) {
		t.Errorf("the launcher is in its command's memory cgroup: %q", l)
	}
	if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("the command: %+v, %v", res, err)
	}
}

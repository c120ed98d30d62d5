//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail"
)

// cpuSpinners is a perl program that ignores SIGCHLD, so the kernel reaps its
// children, and forks n children one after another, each spending ms of CPU
// time and exiting: each is shorter than the watchdog's poll, so the
// per-process figures of /proc lose nearly all of them.
func cpuSpinners(n int, ms int) []string {
	return []string{"perl", "-e", fmt.Sprintf(`use Time::HiRes qw(clock_gettime CLOCK_PROCESS_CPUTIME_ID); $| = 1; $SIG{CHLD} = "IGNORE";
		for ($i = 1; $i <= %d; $i++) {
			my $p = fork; die "fork: $!" unless defined $p;
			if ($p == 0) { 1 while clock_gettime(CLOCK_PROCESS_CPUTIME_ID) < %g; exit 0 }
			select(undef, undef, undef, 0.002) while kill 0, $p;
		}
		print "done\n"`, n, float64(ms)/1000)}
}

// v2Mount is where the cgroup v2 hierarchy is mounted here, "" if nowhere.
func v2Mount() string {
	for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return m
		}
	}
	return ""
}

// TestDelegatedCgroupV2CPU (issue 35, children the kernel reaps itself): an
// ordinary user's server in a cgroup v2 subtree it may write (as systemd
// delegates one to a user's session; here root hands one to the test user and
// starts the command line in it) holds a tree to cpuMs by the kernel's count:
// each launcher's v2 cgroup counts every process its tree ever had, the
// children the kernel reaps itself too. Before, children shorter than a poll
// escaped the watchdog's count, and their CPU time passed cpuMs (3.5 s under
// 1 s). In each mode the user's server can make (user namespaces, and none).
// Positive control: the same user outside the subtree, whose doctor says the
// watchdog alone counts the sum.
func TestDelegatedCgroupV2CPU(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hands a cgroup subtree to an ordinary user")
	}
	mount := v2Mount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy on this host")
	}
	name := os.Getenv("AUTOBOX_TEST_USER")
	if name == "" {
		name = "autobox-test"
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s (make test makes it): %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	sub := filepath.Join(mount, fmt.Sprintf("autobox-e2e-delegated-v2-%d", os.Getpid()))
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v2 subtree to delegate: %v", err)
	}
	t.Cleanup(func() {
		for deadline := time.Now().Add(5 * time.Second); os.Remove(sub) != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	})
	for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
		if err := os.Chown(filepath.Join(sub, f), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.Open(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	home := t.TempDir()
	for _, d := range []string{filepath.Dir(home), home} {
		os.Chmod(d, 0o755)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	// run runs the command line as the user; inside, born in the subtree
	// (CLONE_INTO_CGROUP: only root may move a process there from the root).
	run := func(inside bool, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"), "TMPDIR=" + home}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		if inside {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(dir.Fd())
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, _ := cmd.Output()
		if len(out) == 0 {
			t.Logf("autobox %s: %s", strings.Join(args, " "), stderr.String())
		}
		return string(out)
	}
	if d := run(false, nil, "doctor"); !strings.Contains(d, "the tree's sum: watchdog") {
		t.Errorf("doctor outside the delegated subtree claims the kernel's count:\n%s", d)
	}
	if d := run(true, nil, "doctor"); !strings.Contains(d, "the tree's sum: kernel (each launcher's cgroup v2") {
		t.Errorf("doctor as uid %d in a delegated cgroup v2 subtree:\n%s", uid, d)
	}
	for mode, env := range map[string][]string{"user's default": nil, "no namespaces": {jail.NoNamespacesEnv + "=1"}} {
		t.Run(mode, func(t *testing.T) {
			exec := func(cpu string, n, ms int) limitOut {
				t.Helper()
				args := append([]string{"exec", "--json", "--timeout", "30s", "--cpu", cpu, "--"}, cpuSpinners(n, ms)...)
				var o limitOut
				out := run(true, env, args...)
				if err := json.Unmarshal([]byte(out), &o); err != nil {
					t.Fatalf("exec: %v: %s", err, out)
				}
				return o
			}
			// The command reads its own v2 cgroup where /proc/self/cgroup
			// says (its view's root, or without namespaces its host path),
			// and cannot move itself to the delegated parent, whose files are
			// its user's.
			script := fmt.Sprintf(`p=$(sed -n 's/^0:://p' /proc/self/cgroup); head -1 %[1]s$p/cpu.stat; echo $$ > %[1]s$p/../cgroup.procs && echo LEFT || echo refused`, mount)
			view := run(true, env, "exec", "--", "sh", "-c", script)
			if !strings.HasPrefix(view, "usage_usec ") || !strings.HasSuffix(view, "refused\n") {
				t.Errorf("the command's own v2 cgroup: %q, want its cpu.stat read and the move refused", view)
			}
			o := exec("0", 200, 5)
			if o.Stdout != "done\n" || o.Usage.CPUMs < 1000 {
				t.Errorf("200 auto-reaped children of 5 ms: usage.cpuMs %v, want at least 1000 (the kernel's count): %+v", o.Usage.CPUMs, o)
			}
			// 400 of them under cpuMs 1000: ended at the limit, before the end.
			o = exec("1000", 400, 5)
			if !o.Killed || !strings.HasPrefix(o.Stderr, "cpu limit exceeded (") || o.Stdout == "done\n" {
				t.Errorf("400 auto-reaped children of 5 ms under cpuMs 1000: %+v", o)
			}
		})
	}
}

package watchdog

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// noPtraceEnv marks the re-executed test binary that runs without CAP_SYS_PTRACE.
const noPtraceEnv = "AUTOBOX_WATCHDOG_TEST_NO_PTRACE"

// TestWatchdogReadsAsOwner: root without CAP_SYS_PTRACE (root in a default
// Docker container) watching a tree of uid 65534, which is how a root server
// without namespaces runs commands. The kernel refuses root the tree's
// /proc/PID/io, and every process of it was taken for a hidden writer; read as
// their owner, a readable shell's writes are counted (under the limit it runs,
// past it it is ended by its count), and an execute-only shell, which is not
// dumpable, is still found hiding its writes.
func TestWatchdogReadsAsOwner(t *testing.T) {
	if os.Getenv(noPtraceEnv) == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root: the case is a root server without CAP_SYS_PTRACE whose commands run as uid 65534")
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("setpriv (util-linux) is not installed: it drops CAP_SYS_PTRACE for the re-executed test")
		}
		cmd := exec.Command(setpriv, "--bounding-set=-sys_ptrace", os.Args[0], "-test.run=^TestWatchdogReadsAsOwner$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), noPtraceEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("without CAP_SYS_PTRACE:\n%s", out)
		if err != nil {
			t.Fatalf("the test without CAP_SYS_PTRACE failed: %v", err)
		}
		return
	}
	if hasPtrace() {
		t.Fatal("the re-executed test still holds CAP_SYS_PTRACE")
	}
	dir, err := os.MkdirTemp("", "autobox-watchdog-owner-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	// Control: root's own read of the uid 65534 process is refused here.
	cmd := asNobody(t, dir, "/bin/sh", "-c", "sleep 5")
	_, denied := readWritten(cmd.Process.Pid, make([]byte, 512))
	cmd.Process.Kill()
	cmd.Wait()
	if !denied {
		t.Fatal("root without CAP_SYS_PTRACE read the io of a uid 65534 process: the case this test is for does not arise")
	}

	b, u := watchNobody(t, dir, Limits{Written: 64 << 20}, "/bin/sh", "-c", "head -c 3000000 /dev/zero > f1; sleep 0.3")
	if b.Kind != 0 || u.Written < 2<<20 {
		t.Errorf("a readable shell of uid 65534 writing 3 MB under 64: breach %+v (%s), usage %+v", b, b.Reason(Limits{Written: 64 << 20}, Names{Written: "maxWriteMb"}), u)
	}
	b, _ = watchNobody(t, dir, Limits{Written: 8 << 20}, "/bin/sh", "-c", "for i in 1 2 3 4; do head -c 4000000 /dev/zero > f$i; sleep 0.05; done; sleep 0.3")
	if b.Kind != Disk || b.Hidden != 0 || b.Value <= 8<<20 {
		t.Errorf("a readable shell of uid 65534 writing 16 MB past 8: %+v, want a disk breach by its count", b)
	}
	hidden := filepath.Join(dir, "sh")
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hidden, data, 0o111); err != nil {
		t.Fatal(err)
	}
	b, _ = watchNobody(t, dir, Limits{Written: 64 << 20}, hidden, "-c", "sleep 0.5")
	if b.Kind != Disk || b.Hidden == 0 {
		t.Errorf("an execute-only shell of uid 65534: %+v, want a disk breach naming the hidden writer", b)
	}
}

// asNobody starts argv as uid and gid 65534 in dir.
func asNobody(t *testing.T, dir string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// watchNobody is watchShell for a tree of uid 65534.
func watchNobody(t *testing.T, dir string, l Limits, argv ...string) (Breach, policy.Usage) {
	t.Helper()
	return watchStarted(asNobody(t, dir, argv...), l, Options{Memfds: true})
}

// hasPtrace reports whether this thread holds CAP_SYS_PTRACE.
func hasPtrace() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[0].Effective&(1<<unix.CAP_SYS_PTRACE) != 0
}

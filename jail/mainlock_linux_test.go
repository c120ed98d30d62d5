package jail

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/wire"
)

// NoMainLockEnv makes this test binary's init leave the main thread unlocked
// (testmain_linux_test.go), as a program that forgot the lock would.
const NoMainLockEnv = "AUTOBOX_JAIL_TEST_NO_MAIN_LOCK"

// TestLauncherNeedsLockedMainThread: a launcher whose program did not lock the
// main thread in init refuses to run (launcher.Main), so the thread that is
// restricted can never be the main one, which Go would keep alive with the
// command's restrictions. The positive control is the same launcher with the
// lock, released before use: it exits 0.
func TestLauncherNeedsLockedMainThread(t *testing.T) {
	run := func(env ...string) (int, string) {
		t.Helper()
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ctl, ours := os.NewFile(uintptr(sp[0]), "ctl"), os.NewFile(uintptr(sp[1]), "ours")
		defer ctl.Close()
		ours.Close() // the launcher reads EOF: released before use
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var stderr bytes.Buffer
		cmd := exec.Command(testExe(t), "worker", wire.RoleExec)
		cmd.Env = env
		cmd.ExtraFiles = []*os.File{ctl, w}
		cmd.Stderr = &stderr
		err = cmd.Start()
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	if code, stderr := run(); code != 0 {
		t.Fatalf("positive control: a launcher with the lock, released at once: exit %d, stderr %q", code, stderr)
	}
	code, stderr := run(NoMainLockEnv + "=1")
	if code != 2 || !bytes.Contains([]byte(stderr), []byte(restrict.ErrMainThread.Error())) {
		t.Errorf("a launcher without the main thread locked: exit %d, stderr %q; want exit 2 naming %q", code, stderr, restrict.ErrMainThread)
	}
}

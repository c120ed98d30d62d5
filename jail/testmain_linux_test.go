package jail_test

import (
	"os"
	"testing"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/jail/launcher"
)

// The test binary plays autobox: jail starts os.Executable() with `worker
// exec` (and the probes' roles), dispatched by jail/launcher's table, with the
// main thread locked in init as cmd/autobox locks it. Without that lock every
// launcher refuses to run (TestLauncherNeedsLockedMainThread, and every test
// that starts a command, fail).
// jail.NoMainLockEnv leaves the lock out, for TestLauncherNeedsLockedMainThread.
func init() {
	if os.Getenv(jail.NoMainLockEnv) != "1" {
		launcher.LockMainThread(os.Args)
	}
}

func TestMain(m *testing.M) {
	if launcher.IsChild(os.Args) {
		launcher.Main(os.Args)
	}
	os.Exit(jail.RunTests(m))
}

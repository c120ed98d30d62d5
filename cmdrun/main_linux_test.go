package cmdrun

import (
	"os"
	"testing"

	"github.com/autobox-dev/autobox/jail/launcher"
)

// The main thread of a launcher is never restricted: locked here, as autobox locks it.
func init() { launcher.LockMainThread(os.Args) }

// TestMain lets the test binary play autobox's launcher: jail.Start runs the
// exe it is given (os.Executable() here) as `worker exec`, dispatched by
// jail/launcher.
func TestMain(m *testing.M) {
	if launcher.IsChild(os.Args) {
		launcher.Main(os.Args)
	}
	os.Exit(m.Run())
}

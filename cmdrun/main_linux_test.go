package cmdrun

import (
	"os"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestMain lets the test binary play autobox's launcher: jail.Start runs the
// exe it is given (os.Executable() here) as `worker exec`.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "worker" && os.Args[2] == "exec" {
		jail.LauncherMain()
	}
	os.Exit(m.Run())
}

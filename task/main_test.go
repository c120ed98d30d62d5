package task

import (
	"os"
	"testing"

	"github.com/autobox-dev/autobox/jail/launcher"
)

// The main thread of a launcher is never restricted: locked here, as autobox locks it.
func init() { launcher.LockMainThread(os.Args) }

// TestMain lets the test binary play autobox: `worker exec` is jail's launcher (jail.Start
// runs os.Executable() with it, dispatched by jail/launcher) and `task ...` is Main (what
// Native.Wrap's argv runs).
func TestMain(m *testing.M) {
	switch {
	case launcher.IsChild(os.Args):
		launcher.Main(os.Args)
	case len(os.Args) > 1 && os.Args[1] == "task":
		os.Exit(Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	// A native run reads the user's ceiling file: never the real user's here.
	dir, err := os.MkdirTemp("", "autobox-task-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

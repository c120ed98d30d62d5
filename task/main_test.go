package task

import (
	"os"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestMain lets the test binary play autobox: `worker exec` is jail's launcher (jail.Start
// runs os.Executable() with it) and `task ...` is Main (what Native.Wrap's argv runs).
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 2 && os.Args[1] == "worker" && os.Args[2] == "exec":
		jail.LauncherMain()
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

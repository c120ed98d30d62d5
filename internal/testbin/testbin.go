// Package testbin gives a package's tests the autobox binary, for tests whose
// child processes (JS workers, launchers) must be the real program: built once
// per test binary into a directory of its own, or the one an environment
// variable names (a test that re-runs its own test binary passes it on).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main is a TestMain: it sets *bin to the binary envName names, or builds
// cmd/autobox (cmdDir, relative to the package under test) into a temporary
// directory, calls setup (if not nil) with that directory, runs the tests, removes
// the directory and exits with the tests' status.
func Main(m *testing.M, envName, cmdDir string, bin *string, setup func(dir string)) {
	dir, err := os.MkdirTemp("", "autobox-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if setup != nil {
		setup(dir)
	}
	*bin = filepath.Join(dir, "autobox")
	if b := os.Getenv(envName); b != "" {
		*bin = b
	} else {
		build := exec.Command("go", "build", "-o", *bin, cmdDir)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building autobox:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

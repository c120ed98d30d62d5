//go:build !linux && !darwin

package cli

import (
	"errors"
	"fmt"
	"runtime"
)

// platformChecks: autobox has no OS sandbox on this platform.
func platformChecks(r *DoctorReport) {
	r.add("sandbox", statusMissing, "no OS sandbox on "+runtime.GOOS, "exec_command is refused; JS workers are not jailed")
}

func treeWalkable() error { return nil }

func cloneProbe(dir string) (string, bool, error) {
	return "", false, fmt.Errorf("%w on %s", errors.ErrUnsupported, runtime.GOOS)
}

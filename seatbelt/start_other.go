//go:build !darwin

package seatbelt

import (
	"fmt"
	"os"
	"runtime"
)

// Start fails closed: seatbelt exists only on macOS.
func Start(spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	return nil, Available()
}

// Available reports that seatbelt is missing here: it needs macOS and its
// /usr/bin/sandbox-exec.
func Available() error {
	return fmt.Errorf("%w: seatbelt needs macOS and %s (this is %s)", ErrUnavailable, SandboxExec, runtime.GOOS)
}

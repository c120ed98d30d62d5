//go:build !unix

package task

import (
	"context"
	"fmt"
	"syscall"
)

// lockFile fails closed where flock does not exist: task operations would race.
func lockFile(ctx context.Context, path string) (func(), error) {
	return nil, fmt.Errorf("%w: file locks on this platform", ErrUnsupported)
}

func lockRun(path string) (func(), error) {
	return nil, fmt.Errorf("%w: file locks on this platform", ErrUnsupported)
}

func runHolder(path string) int { return 0 }

func signalProcess(pid int, sig syscall.Signal) error {
	return fmt.Errorf("%w: signals on this platform", ErrUnsupported)
}

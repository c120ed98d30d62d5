//go:build !linux

package task

import (
	"errors"
	"fmt"
)

// setImmutable is Linux only: elsewhere the check after each run is what protects host git.
func setImmutable(path string, on bool) error {
	return fmt.Errorf("%s: immutable files: %w", path, errors.ErrUnsupported)
}

func isImmutable(path string) bool { return false }

//go:build darwin || linux

// Package rlimit sets a process's resource limits for the command it is about to
// start (the jail's launcher, the macOS limits wrapper).
package rlimit

import (
	"fmt"
	"syscall"
)

// Set sets a resource's soft and hard limits without raising the hard one (that
// needs privilege, which the callers lack or have dropped): a hard limit below
// what is asked is kept, and a soft limit above it fails with EPERM, as the
// kernel would. It uses syscall.Setrlimit, which for RLIMIT_NOFILE also tells
// Go's fork not to restore, in children, the soft limit Go found at start-up.
func Set(resource int, soft, hard uint64) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(resource, &cur); err != nil {
		return err
	}
	hard = min(hard, uint64(cur.Max))
	if soft > hard {
		return fmt.Errorf("above the hard limit of %d: %w", hard, syscall.EPERM)
	}
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: soft, Max: hard})
}

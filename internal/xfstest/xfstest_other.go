//go:build !linux

package xfstest

import (
	"fmt"
	"runtime"
)

func notLinux() error {
	return fmt.Errorf("%w: loop-mounted XFS and tmpfs mounts are made on Linux only, not %s", ErrUnavailable, runtime.GOOS)
}

// MountXFS is Linux-only.
func MountXFS(dir string, size int64) (string, func() error, error) { return "", nil, notLinux() }

// MountTmpfs is Linux-only.
func MountTmpfs(dir string) (string, func() error, error) { return "", nil, notLinux() }

// MountTmpfsSized is unavailable off Linux.
func MountTmpfsSized(mnt string, size int64) (string, func() error, error) {
	return "", nil, notLinux()
}

// SharedExtents needs FIEMAP, which is Linux-only.
func SharedExtents(path string) (shared, total int, err error) { return 0, 0, notLinux() }

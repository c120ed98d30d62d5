//go:build unix

package procfs

import (
	"errors"
	"syscall"
)

// Exists reports whether a process with this pid exists (kill(pid, 0): EPERM
// means one exists that this process may not signal). Autobox names what it
// leaves on disk after its pid, so that a later process can remove what one
// that is gone left; a reused pid only keeps such a leftover longer.
func Exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

package seatbelt

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// fdDir lists the calling process's open descriptors.
const fdDir = "/proc/self/fd"

// waitExited blocks until child pid has exited, without reaping it. (Linux
// builds the runner only so its tests can run here.)
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("waitid on pid %d: %w", pid, err)
		}
		return nil
	}
}

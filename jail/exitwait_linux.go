package jail

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once pid, a child of this process, has exited, without
// reaping it (the caller reaps). It waits in Go's poller on a pidfd, so that
// the thread it runs on holds no P meanwhile. A tree's waiter runs on a locked
// thread, and a blocking waitid there kept that thread's P in the system call
// until the runtime's monitor took it back, up to 10 ms later: the goroutines
// the waiter had just made ready, such as the call waiting for its launcher to
// be forked, waited that long with a CPU idle. Where a pidfd cannot be had
// (Linux < 5.3) or polled, it waits in a blocking waitid as before.
func awaitExit(pid int) {
	if f := pollablePidfd(pid); f != nil {
		defer f.Close()
		if rc, err := f.SyscallConn(); err == nil {
			werr := rc.Read(func(uintptr) bool {
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
				switch {
				case errors.Is(err, unix.EINTR):
					return false
				case err != nil:
					return true // ECHILD: nothing left to wait for
				}
				return info.Signo != 0 // Linux zeroes it while the child runs
			})
			if werr == nil {
				return
			}
		}
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// pollablePidfd opens pid's pidfd for Go's poller, or returns nil.
func pollablePidfd(pid int) *os.File {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd") // non-blocking: registered with the poller
}

package seatbelt

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// fdDir lists the calling process's open descriptors.
const fdDir = "/dev/fd"

// waitExited blocks until child pid has exited, without reaping it.
func waitExited(pid int) error {
	kq, err := unix.Kqueue()
	if err != nil {
		return fmt.Errorf("kqueue: %w", err)
	}
	defer unix.Close(kq)
	var change unix.Kevent_t
	unix.SetKevent(&change, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change.Fflags = unix.NOTE_EXIT
	events := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, []unix.Kevent_t{change}, events, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ESRCH):
			return nil // already a zombie: our child, not yet reaped
		case err != nil:
			return fmt.Errorf("kevent on pid %d: %w", pid, err)
		case n == 1 && events[0].Flags&unix.EV_ERROR != 0:
			if unix.Errno(events[0].Data) == unix.ESRCH {
				return nil
			}
			return fmt.Errorf("kevent on pid %d: %w", pid, unix.Errno(events[0].Data))
		case n == 1:
			return nil
		}
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// busyError is the cross-process lock refusal. Its text is the seed's, so agents that
// learned the TypeScript server's message recognise it.
type busyError struct{ path string }

func (e *busyError) Error() string {
	return fmt.Sprintf("workspace lock: %s is held. Another autobox operation may be busy; retry when it finishes.", e.path)
}

func (e *busyError) Unwrap() error { return ErrBusy }

// busyAfter is how long the cross-process lock must stay refused before Lock reports
// ErrBusy.
const busyAfter = 100 * time.Millisecond

// begin starts every workspace operation: it takes the lock and clears what crashed
// operations left behind.
func (s *Store) begin(ctx context.Context) (unlock func(), err error) {
	if unlock, err = s.Lock(ctx); err == nil {
		s.cleanup()
	}
	return unlock, err
}

// Lock takes the operation lock: it waits (until ctx ends) for other operations of this
// process, then takes flock(LOCK_EX|LOCK_NB) on <StateDir>/operation.lock and returns
// ErrBusy if another process holds it (after busyAfter, not at once: see below). Executions that mount a workspace hold
// the lock for their duration, so the working tree cannot be synced under them.
//
// The kernel drops the flock when its descriptor closes, including when the process
// dies, so a lock file left on disk never means the lock is held.
func (s *Store) Lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the workspace lock: %w", ctx.Err())
	}
	release := func() { <-s.sem }
	fd, err := unix.Open(s.lockPath, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		release()
		return nil, s.inState("workspace lock: opening operation.lock", err)
	}
	// A child this process is forking holds a copy of a descriptor until its exec
	// closes it (close-on-exec), and with it, for a moment, the flock of an operation
	// that has already ended here. So a refusal is believed only after it has lasted
	// busyAfter; another process's operation lasts far longer.
	if err = flockPatient(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		release()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &busyError{path: s.lockPath}
		}
		return nil, fmt.Errorf("workspace lock: flock %s: %w", s.lockPath, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unlockClose(fd)
			release()
		})
	}, nil
}

// unlockClose releases the flock held on fd and closes it. The explicit
// LOCK_UN ends the lock at once even where a child this process is forking
// holds a copy of fd until its exec: closing alone left the lock held for that
// moment, which a loaded machine stretched past busyAfter (an exec_command
// right after a sync was refused "being changed by another autobox process").
func unlockClose(fd int) {
	_ = unix.Flock(fd, unix.LOCK_UN)
	unix.Close(fd)
}

// flockPatient takes flock(mode) on fd without blocking, but believes a refusal only
// once it has lasted busyAfter (see Lock); it returns EWOULDBLOCK then.
func flockPatient(fd, mode int) error {
	for deadline := time.Now().Add(busyAfter); ; {
		err := unix.Flock(fd, mode|unix.LOCK_NB)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

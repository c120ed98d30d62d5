package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Per-workspace locks. Calls and sessions that mount a workspace use it (shared);
// sync, resolve and discard change it (exclusive). So a session can hold its
// workspace for its whole life while other workspaces, and other calls on the same
// one, go on; and a change is never made under a running command.
//
// Each workspace has a lock file, <state>/workspace-locks/<id>.lock: users hold it
// with flock(LOCK_SH), a change with flock(LOCK_EX), which is what other autobox
// processes see. Within a process a change waits for the calls that use the
// workspace (each is bounded by its time limit), but is refused at once, naming it,
// when a session uses it: a session may run for an hour. Across processes a change
// is refused after busyAfter, naming the sessions the other processes registered in
// held/ (held.go). status takes no workspace lock: it changes nothing, and reports
// the working tree as it is at that moment.
//
// Lock order: a workspace's lock before the operation lock (lock.go); users take
// no other lock, so nothing waits in a cycle.

// ErrInUse: a change (sync, resolve, discard) was refused because a running call or
// session mounts the workspace. Such errors also match ErrBusy: retry later.
var ErrInUse = errors.New("workspace in use")

// User describes a call or session that mounts a workspace, for the refusal a
// change of that workspace gets meanwhile.
type User struct {
	// Who names it, as its client knows it: `session s-… (python3 -m http.server)`,
	// `an exec_command call (make test)`.
	Who string
	// Session: it may run for long; a change is refused at once instead of waiting.
	Session bool
}

// wsLocks is the in-process half of the per-workspace locks.
type wsLocks struct {
	mu sync.Mutex
	m  map[string]*wsLock
}

type wsLock struct {
	changing bool // a change holds it
	users    map[*wsUser]bool
	// changed is closed (and replaced) whenever the lock is released, for waiters.
	changed chan struct{}
}

type wsUser struct {
	User
	since time.Time
}

// get returns id's lock (l.mu held).
func (l *wsLocks) get(id string) *wsLock {
	if l.m == nil {
		l.m = map[string]*wsLock{}
	}
	w := l.m[id]
	if w == nil {
		w = &wsLock{users: map[*wsUser]bool{}, changed: make(chan struct{})}
		l.m[id] = w
	}
	return w
}

// released wakes waiters and forgets an idle lock (l.mu held).
func (l *wsLocks) released(id string, w *wsLock) {
	close(w.changed)
	w.changed = make(chan struct{})
	if !w.changing && len(w.users) == 0 {
		delete(l.m, id)
	}
}

// uses lists this process's sessions that use each workspace, for the registry in
// held/. Calls are left out: they are short, and registering each would cost every
// call two writes of the registry (about 0.5 ms each on a disk).
func (l *wsLocks) uses() map[string][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]string{}
	for id, w := range l.m {
		for u := range w.users {
			if u.Session {
				out[id] = append(out[id], describeUser(u))
			}
		}
		slices.Sort(out[id])
	}
	return out
}

func describeUser(u *wsUser) string {
	return fmt.Sprintf("%s, running for %s", u.Who, time.Since(u.since).Round(time.Second))
}

func (s *Store) wsLockPath(id string) string {
	return filepath.Join(s.stateDir, "workspace-locks", id+".lock")
}

// flockWorkspace takes id's lock file in mode (LOCK_SH or LOCK_EX), refusing after
// busyAfter as Lock does; it returns the descriptor that holds it.
func (s *Store) flockWorkspace(id string, mode int) (int, error) {
	p := s.wsLockPath(id)
	const flags = unix.O_RDWR | unix.O_CREAT | unix.O_CLOEXEC | unix.O_NOFOLLOW
	fd, err := unix.Open(p, flags, 0o600)
	if errors.Is(err, unix.ENOENT) { // the first lock of this state dir
		if err := os.Mkdir(filepath.Dir(p), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return -1, s.inState("workspace lock: making workspace-locks", err)
		}
		fd, err = unix.Open(p, flags, 0o600)
	}
	if err != nil {
		return -1, s.inState("workspace lock: opening workspace-locks/"+id+".lock", err)
	}
	if err = flockPatient(fd, mode); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return -1, &busyError{path: p}
		}
		return -1, fmt.Errorf("workspace lock: flock %s: %w", p, err)
	}
	return fd, nil
}

// Use marks the workspaces ids as used by u until release is called: it waits
// (until ctx ends) for a change of one of them that this process is making, and
// returns ErrBusy if another process is changing one. A workspace discarded
// meanwhile is not found.
func (s *Store) Use(ctx context.Context, ids []string, u User) (release func(), err error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return func() {}, nil
	}
	me := &wsUser{User: u, since: time.Now()}
	var fds []int
	var taken []string
	release = func() {
		for _, fd := range fds {
			unlockClose(fd)
		}
		s.ws.mu.Lock()
		for _, id := range taken {
			w := s.ws.m[id]
			delete(w.users, me)
			s.ws.released(id, w)
		}
		s.ws.mu.Unlock()
		if u.Session {
			s.held.changed()
			s.publishHeld() // a failure leaves a stale entry, which only names a user that is gone
		}
	}
	for _, id := range ids {
		if err := validateID(id); err != nil {
			release()
			return nil, err
		}
		if err := s.waitNoChange(ctx, id, me); err != nil {
			release()
			return nil, err
		}
		taken = append(taken, id)
		fd, err := s.flockWorkspace(id, unix.LOCK_SH)
		if err != nil {
			release()
			return nil, fmt.Errorf("workspace %s is being changed (sync, resolve or discard) by another autobox process: %w", id, err)
		}
		fds = append(fds, fd)
		// Discarded after the caller looked it up, before the lock was ours.
		if _, err := os.Stat(s.recordPath(id)); errors.Is(err, os.ErrNotExist) {
			release()
			if s.isDiscarding(id) {
				return nil, discardingError(id)
			}
			return nil, notFound(id)
		}
	}
	if u.Session {
		s.held.changed()
		if err := s.publishHeld(); err != nil {
			release()
			return nil, fmt.Errorf("%w; the session was not started", s.inState("registering the workspaces a session mounts", err))
		}
	}
	return release, nil
}

// waitNoChange waits until no change of id is under way in this process, then
// registers me as its user.
func (s *Store) waitNoChange(ctx context.Context, id string, me *wsUser) error {
	for {
		s.ws.mu.Lock()
		w := s.ws.get(id)
		if !w.changing {
			w.users[me] = true
			s.ws.mu.Unlock()
			return nil
		}
		ch := w.changed
		s.ws.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for a change of workspace %s to finish: %w", id, ctx.Err())
		}
	}
}

// change takes workspace id's lock for action (sync, resolve, discard), which no
// call or session may use meanwhile. It waits for this process's calls, and is
// refused with ErrInUse when a session of this process or a user of another process
// has the workspace mounted.
func (s *Store) change(ctx context.Context, id, action string) (release func(), err error) {
	if _, err := s.loadRecord(id); err != nil && !(action == "discard" && errors.Is(err, ErrDiscarding)) {
		return nil, err
	}
	for {
		s.ws.mu.Lock()
		w := s.ws.get(id)
		var sessions []string
		for u := range w.users {
			if u.Session {
				sessions = append(sessions, describeUser(u))
			}
		}
		if len(sessions) > 0 {
			for u := range w.users {
				if !u.Session {
					sessions = append(sessions, describeUser(u))
				}
			}
			s.ws.mu.Unlock()
			return nil, inUse(id, action, sessions, false)
		}
		if !w.changing && len(w.users) == 0 {
			w.changing = true
			s.ws.mu.Unlock()
			break
		}
		ch := w.changed
		s.ws.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the calls that use workspace %s to end: %w", id, ctx.Err())
		}
	}
	unchange := func() {
		s.ws.mu.Lock()
		w := s.ws.m[id]
		w.changing = false
		s.ws.released(id, w)
		s.ws.mu.Unlock()
	}
	fd, err := s.flockWorkspace(id, unix.LOCK_EX)
	if err != nil {
		unchange()
		if users := s.otherUses()[id]; len(users) > 0 {
			return nil, inUse(id, action, users, true)
		}
		return nil, err
	}
	return func() { unlockClose(fd); unchange() }, nil
}

// dropWorkspaceLock removes a discarded workspace's lock file while its change
// holds it; a user that opened it meanwhile finds no record once it gets it.
func (s *Store) dropWorkspaceLock(id string) {
	os.Remove(s.wsLockPath(id))
}

// inUseError refuses a change of a workspace that running calls or sessions mount.
type inUseError struct{ msg string }

func (e *inUseError) Error() string   { return e.msg }
func (e *inUseError) Unwrap() []error { return []error{ErrInUse, ErrBusy} }

func inUse(id, action string, users []string, elsewhere bool) error {
	end := "End the session (exec_session close) or let it end"
	if elsewhere {
		end = "End it where it was started (exec_session close in that server; autobox session close for the command line's sessions) or let it end"
	}
	return &inUseError{msg: fmt.Sprintf("%s of workspace %s refused: it is mounted by %s; a %s now would change files under a running command. "+
		"%s, then %s again; status works meanwhile",
		action, id, strings.Join(users, " and by "), action, end, action)}
}

//go:build linux

package etcsecrets

import (
	"errors"

	"golang.org/x/sys/unix"
)

// startWatching makes the inotify descriptor and reads its events.
func (s *Scanner) startWatching() {
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC); err == nil {
		s.ino, s.watched, s.wd = fd, true, map[int]string{}
		go s.watch()
	}
}

// addWatch watches directory p for changes of its entries, with s.mu held.
func (s *Scanner) addWatch(p string) {
	if s.ino < 0 {
		return
	}
	const events = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	wd, err := unix.InotifyAddWatch(s.ino, p, events)
	if err != nil {
		// A directory not watched (the user's limit of watches): walk again
		// every second instead.
		s.watched = false
		return
	}
	s.wd[wd] = p
}

// watch marks the list dirty at each event; it runs for the scanner's life.
func (s *Scanner) watch() {
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(s.ino, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		s.mu.Lock()
		s.dirty = true
		if err != nil || n <= 0 {
			s.watched = false // no more events: walk every second
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

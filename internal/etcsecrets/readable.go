package etcsecrets

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// Readable is Hidden narrowed to what this process could read itself, for a
// server whose commands run with its own credentials (an ordinary user's: in
// user namespaces or Landlock alone, a command is that user, with no power over
// root's files). A hidden path the kernel's own permissions already keep from
// the user (/etc/shadow, a 0700 directory of root's) needs no Landlock rule of
// its own, and without one a command's /etc is a single rule rather than one
// per entry of every directory that holds a secret (170 on a Debian host, each
// opened and added by every launcher). A hidden directory the user may list and
// enter stands for its entries, each judged the same way (and watched, so that
// a file put there later is judged at the next call); one the user may enter
// but not list stays hidden whole.
//
// As root it is Hidden itself: a root server's commands are uid 0, or run as an
// unprivileged uid whose permissions are not this process's.
func (s *Scanner) Readable() []string {
	hidden := s.Hidden()
	if os.Geteuid() == 0 {
		return hidden
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readableOf != nil && slices.Equal(s.readableOf, hidden) {
		return s.readable
	}
	s.readable = s.narrow(hidden, 0)
	s.readableOf = hidden
	return s.readable
}

// maxNarrowed bounds the entries one hidden directory is narrowed through;
// a bigger one stays hidden whole.
const maxNarrowed = 256

// narrow keeps of paths what this process may read, with s.mu held.
func (s *Scanner) narrow(paths []string, depth int) []string {
	out := []string{}
	for _, p := range paths {
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			out = append(out, p) // cannot tell: stays hidden
			continue
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			out = append(out, p)
		case unix.S_IFDIR:
			if !can(p, unix.X_OK) {
				continue // the kernel keeps everything below it out
			}
			names, err := readNames(p)
			if !can(p, unix.R_OK) || err != nil || len(names) > maxNarrowed || depth >= 8 {
				out = append(out, p)
				continue
			}
			s.addWatch(p)
			below := make([]string, len(names))
			for i, n := range names {
				below[i] = filepath.Join(p, n)
			}
			out = append(out, s.narrow(below, depth+1)...)
		default:
			if can(p, unix.R_OK) {
				out = append(out, p)
			}
		}
	}
	return out
}

// can reports whether this process's effective ids may access p as mode asks.
func can(p string, mode uint32) bool {
	return unix.Faccessat(unix.AT_FDCWD, p, mode, unix.AT_EACCESS) == nil
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(maxNarrowed + 1)
	if errors.Is(err, io.EOF) { // an empty directory
		err = nil
	}
	return names, err
}

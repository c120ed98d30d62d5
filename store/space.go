package store

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// Out-of-space errors in the user's words: the path being written, the filesystem
// that is full and which of autobox's places it holds (the host source, the
// workspace storage, the state directory), never the staging file the write
// happened to be in. Each operation adds what it did and did not apply.

// The places a full filesystem can hold, as errors name them.
const (
	roleSource  = "the host source"
	roleStorage = "the workspace storage"
	roleState   = "the state directory"
)

// spaceError is a write that failed for want of space (ENOSPC) or quota (EDQUOT).
type spaceError struct {
	errno    unix.Errno
	mount    string // where the full filesystem is mounted
	role     string // which of autobox's places it holds, "" if unknown
	free     uint64 // bytes still available to this user
	noInodes bool   // it has room for data but no inode left for a new file
}

func (e *spaceError) Error() string {
	what := "is full"
	switch {
	case e.errno == unix.EDQUOT:
		what = "is over the disk quota"
	case e.noInodes:
		what = "has no inodes left for new files and directories"
	}
	holds := ""
	if e.role != "" {
		holds = ", which holds " + e.role + ","
	}
	return fmt.Sprintf("%v: the filesystem mounted at %s%s %s (%s free)", e.errno, e.mount, holds, what, byteSize(e.free))
}

func (e *spaceError) Unwrap() error { return e.errno }

// inUserWords returns err, a failure writing path rel beneath r, as the user should
// read it: doing (with one %s, for the path) then the error. An out-of-space failure
// names r's path joined with rel and the filesystem that is full, not the staging
// file the write was in; any other error names rel and is wrapped as it is.
func inUserWords(r *root, rel, doing string, err error) error {
	if se := spaceIn(r, err); se != nil {
		return fmt.Errorf(doing+": %w", path.Join(r.path, rel), se)
	}
	shown := rel
	if rel == "" {
		shown = r.path
	}
	return fmt.Errorf(doing+": %w", shown, err)
}

// noSpace reports whether err is for want of space or quota.
func noSpace(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// spaceIn returns err as a *spaceError about the filesystem holding r, or nil if err
// is not for want of space. One that is already a *spaceError is returned as it is.
func spaceIn(r *root, err error) error {
	var errno unix.Errno
	if !noSpace(err) || !errors.As(err, &errno) {
		return nil
	}
	var known *spaceError
	if errors.As(err, &known) {
		return known
	}
	se := &spaceError{errno: errno, mount: r.path, role: r.role}
	var st unix.Statfs_t
	if unix.Fstatfs(r.fd, &st) == nil {
		se.free = uint64(st.Bavail) * uint64(st.Bsize)
		se.noInodes = st.Files > 0 && st.Ffree == 0
	}
	if m := mountOf(r); m != "" {
		se.mount = m
	}
	return se
}

// orSpace is spaceIn(r, err) if err is for want of space, else err.
func orSpace(r *root, err error) error {
	if se := spaceIn(r, err); se != nil {
		return se
	}
	return err
}

// spaceInPath is spaceIn for directory dir, which holds role.
func spaceInPath(dir, role string, err error) error {
	if !noSpace(err) {
		return nil
	}
	r, oerr := openRoot(dir)
	if oerr != nil {
		var errno unix.Errno
		if !errors.As(err, &errno) {
			return nil
		}
		return &spaceError{errno: errno, mount: dir, role: role}
	}
	defer r.Close()
	r.role = role
	return spaceIn(r, err)
}

// inState returns err, a failure of doing in the state directory, naming the
// directory and, out of space, its filesystem.
func (s *Store) inState(doing string, err error) error {
	if se := spaceInPath(s.stateDir, roleState, err); se != nil {
		return fmt.Errorf("%s in %s: %w", doing, s.stateDir, se)
	}
	return fmt.Errorf("%s in %s: %w", doing, s.stateDir, err)
}

func byteSize(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

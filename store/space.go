package store

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// Out-of-space errors in the user's words: the path being written and the filesystem
// that is full, never the staging file the write happened to be in.

// spaceError is a write that failed for want of space (ENOSPC) or quota (EDQUOT).
type spaceError struct {
	errno unix.Errno
	mount string // where the full filesystem is mounted
	free  uint64 // bytes still available to this user
}

func (e *spaceError) Error() string {
	what := "is full"
	if e.errno == unix.EDQUOT {
		what = "is over the disk quota"
	}
	return fmt.Sprintf("%v: the filesystem mounted at %s %s (%s free)", e.errno, e.mount, what, byteSize(e.free))
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

// spaceIn returns err as a *spaceError about the filesystem holding r, or nil if err
// is not for want of space.
func spaceIn(r *root, err error) error {
	var errno unix.Errno
	if !errors.Is(err, unix.ENOSPC) && !errors.Is(err, unix.EDQUOT) || !errors.As(err, &errno) {
		return nil
	}
	se := &spaceError{errno: errno, mount: r.path}
	var st unix.Statfs_t
	if unix.Fstatfs(r.fd, &st) == nil {
		se.free = uint64(st.Bavail) * uint64(st.Bsize)
	}
	if m := mountOf(r); m != "" {
		se.mount = m
	}
	return se
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

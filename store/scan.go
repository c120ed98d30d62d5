package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// entry is what a scan records about one path: enough to decide "unchanged" from
// metadata alone in the common case.
type entry struct {
	typ   uint32 // st_mode & S_IFMT
	perm  uint32 // ordinary permission bits; special bits are not synchronized
	size  int64
	mtime int64 // nanoseconds
	link  string
	// Directories only: the inode and ctime the baseline manifest checks to tell
	// whether the directory's entries are still the ones it recorded.
	ino   uint64
	ctime int64
}

func entryOf(st *unix.Stat_t) entry {
	e := entry{
		typ:   uint32(st.Mode) & unix.S_IFMT,
		perm:  uint32(st.Mode) & 0o777,
		size:  st.Size,
		mtime: unix.TimespecToNsec(st.Mtim),
	}
	switch e.typ {
	case unix.S_IFDIR:
		e.ino, e.ctime = uint64(st.Ino), unix.TimespecToNsec(st.Ctim)
	case unix.S_IFREG:
		e.ctime = unix.TimespecToNsec(st.Ctim)
	}
	return e
}

// racy reports whether a recorded file (the baseline's copy, e its entry)
// cannot be trusted to be unchanged by its size and mtime alone: its mtime is
// within one timestamp tick of when the copy was made (its ctime), so the file
// it was copied from may have been written again in that same tick, keeping
// its mtime, and the edit would look like no change (git's "racily clean"
// entries). Such files are compared by content. A tick is a few milliseconds
// where mtimes have nanoseconds (ext4, XFS, btrfs, tmpfs: the kernel's coarse
// clock), up to 2 s where they have whole seconds (FAT, old ext3, some
// network filesystems). A future mtime is racy too.
func racy(e entry) bool {
	if e.typ != unix.S_IFREG || e.ctime == 0 {
		return false
	}
	window := racyTick
	if e.mtime%1e9 == 0 {
		window = racyTickCoarse
	}
	return e.mtime > e.ctime-int64(window)
}

// The ticks racy allows for (see there).
const (
	racyTick       = 50 * time.Millisecond
	racyTickCoarse = 2 * time.Second
)

func (e entry) isDir() bool { return e.typ == unix.S_IFDIR }

// sameMeta reports whether two entries look identical without reading content.
// Directory sizes and times change with their entries and are not compared.
func sameMeta(a, b entry) bool {
	if a.typ != b.typ || a.perm != b.perm {
		return false
	}
	switch a.typ {
	case unix.S_IFREG:
		return a.size == b.size && a.mtime == b.mtime
	case unix.S_IFLNK:
		return a.link == b.link
	}
	return true
}

// typeName names a file type for messages.
func typeName(typ uint32) string {
	switch typ {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	}
	return fmt.Sprintf("file of type %#o", typ)
}

func supportedType(typ uint32) bool {
	return typ == unix.S_IFREG || typ == unix.S_IFDIR || typ == unix.S_IFLNK
}

// hostStaging matches the sync staging directories autobox creates in a source root.
// Only this exact shape is treated as autobox's own, so a project file that merely
// starts with the prefix is neither ignored nor deleted.
var hostStaging = lazyre.New(`^\.autobox-sync-[0-9a-f]{16}$`)

// skip reports whether a scan or copy leaves rel out: excluded paths and, at the top
// level, autobox's sync staging directories.
func skip(rel string, ex excludes) bool {
	if !strings.Contains(rel, "/") && hostStaging().MatchString(rel) {
		return true
	}
	return ex.match(rel)
}

// skipName is skip for name in directory dir, without building the path when nothing
// is excluded.
func skipName(dir, name string, ex excludes) bool {
	if dir == "" && hostStaging().MatchString(name) {
		return true
	}
	return ex.matchIn(dir, name)
}

// scan records every entry beneath r without following symlinks.
func scan(ctx context.Context, r *root, ex excludes) (tree, error) {
	return scanBelow(ctx, r, "", ex, 0)
}

// scanBelow records every entry beneath directory rel of r (not rel itself). A scan
// is bound by one lstat per entry, so subdirectories are read by up to GOMAXPROCS
// goroutines; sizeHint presizes the result.
func scanBelow(ctx context.Context, r *root, rel string, ex excludes, sizeHint int) (tree, error) {
	fd, err := r.openDir(rel)
	if err != nil {
		return nil, err
	}
	s := &scanner{ctx: ctx, r: r, ex: ex, slots: make(chan struct{}, runtime.GOMAXPROCS(0)), t: make(tree, sizeHint)}
	s.dir(fd, rel)
	s.wg.Wait()
	if s.err != nil {
		return nil, s.err
	}
	return s.t, nil
}

type scanner struct {
	ctx   context.Context
	r     *root
	ex    excludes
	slots chan struct{} // extra goroutines that may run
	wg    sync.WaitGroup

	mu  sync.Mutex
	t   tree
	err error // the first failure
}

func (s *scanner) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *scanner) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

// dir records the entries of directory fd (at rel) and recurses; it closes fd.
func (s *scanner) dir(fd int, rel string) {
	defer unix.Close(fd)
	if err := s.ctx.Err(); err != nil {
		s.fail(err)
		return
	}
	if s.failed() {
		return
	}
	ents, err := readDirents(fd)
	if err != nil {
		s.fail(s.r.errorf("readdir", rel, err))
		return
	}
	found := make([]named, 0, len(ents))
	for _, d := range ents {
		n := d.name
		if skipName(rel, n, s.ex) {
			continue
		}
		e, ok, err := lstatAt(fd, n)
		if err != nil {
			s.fail(s.r.errorf("lstat", joinRel(rel, n), err))
			return
		}
		if !ok { // removed since readdir: absent, as a later scan would see it
			continue
		}
		if !e.isDir() {
			found = append(found, named{n, e})
			continue
		}
		cfd, err := unix.Openat(fd, n, openDirFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			s.fail(s.r.errorf("open", joinRel(rel, n), err))
			return
		}
		found = append(found, named{n, e})
		p := joinRel(rel, n)
		select {
		case s.slots <- struct{}{}:
			s.wg.Go(func() {
				defer func() { <-s.slots }()
				s.dir(cfd, p)
			})
		default:
			s.dir(cfd, p)
		}
	}
	slices.SortFunc(found, func(a, b named) int { return strings.Compare(a.name, b.name) })
	s.mu.Lock()
	s.t[rel] = found
	s.mu.Unlock()
}

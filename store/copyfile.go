package store

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// createAt creates a new file dirfd/name with permission bits perm (less the umask);
// it fails if anything is already there, so a planted symlink or hard link is never
// written through. Callers create files only inside private (0700) directories, so the
// final bits can be set at once.
func createAt(dirfd int, name string, perm uint32) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return -1, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return fd, nil
}

// cloneUnsupported reports clone failures that mean "these two files cannot share
// blocks" (different filesystems, no copy-on-write, incompatible inode flags), as
// opposed to I/O errors, which are never papered over with a copy.
func cloneUnsupported(err error) bool {
	for _, e := range []error{unix.EXDEV, unix.EOPNOTSUPP, unix.ENOTSUP, unix.ENOTTY, unix.ENOSYS, unix.EINVAL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// cloneMemo remembers, for one destination, the source filesystems it cannot clone
// from, so copying many files does not pay a failed create, clone and unlink for each.
type cloneMemo struct {
	mu sync.Mutex
	no map[uint64]bool // source st_dev → cloning failed as unsupported
}

func (m *cloneMemo) cannot(dev uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.no[dev]
}

func (m *cloneMemo) mark(dev uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.no == nil {
		m.no = map[uint64]bool{}
	}
	m.no[dev] = true
}

// placed is a file placeFile created, open until finish.
type placed struct {
	fd      int
	dirfd   int
	name    string
	cloned  bool
	hasPerm bool // created with its final permission bits
}

// placeFile creates dirfd/name holding the content of src (a regular file open for
// reading, whose stat is st): a clone when the filesystems allow it, otherwise an
// ordinary copy if allowCopy. The caller finishes the file.
func placeFile(src int, st *unix.Stat_t, dirfd int, name string, perm uint32, allowCopy bool, memo *cloneMemo) (placed, error) {
	dev := uint64(st.Dev)
	if !allowCopy || !memo.cannot(dev) {
		fd, hasPerm, err := cloneAt(src, dirfd, name, perm)
		if err == nil {
			return placed{fd: fd, dirfd: dirfd, name: name, cloned: true, hasPerm: hasPerm}, nil
		}
		if !allowCopy || !cloneUnsupported(err) {
			return placed{}, err
		}
		memo.mark(dev)
	}
	fd, err := createAt(dirfd, name, perm)
	if err != nil {
		return placed{}, err
	}
	if err := copyContent(fd, src); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return placed{}, fmt.Errorf("copying into %s: %w", name, err)
	}
	return placed{fd: fd, dirfd: dirfd, name: name, hasPerm: umaskKeeps(perm)}, nil
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// copyContent copies src from its start to dst with pread/write. src may have been
// opened O_NONBLOCK, which regular files ignore.
func copyContent(dst, src int) error {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var off int64
	for {
		n, err := unix.Pread(src, buf, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		for w := buf[:n]; len(w) > 0; {
			m, err := unix.Write(dst, w)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			w = w[m:]
		}
		off += int64(n)
	}
}

// finish gives a placed file its final permission bits (if creation could not) and
// mtime, stats it into st if st is not nil, and closes it. (A file about to be renamed
// into a host tree is made durable by its caller: see stageWindow.)
func (p placed) finish(perm uint32, mtime int64, st *unix.Stat_t) error {
	var err error
	if !p.hasPerm {
		err = unix.Fchmod(p.fd, perm)
	}
	if err == nil {
		err = setTimes(p.dirfd, p.name, mtime)
	}
	if err == nil && st != nil {
		err = unix.Fstat(p.fd, st)
	}
	if cerr := unix.Close(p.fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("finishing %s: %w", p.name, err)
	}
	return nil
}

// cloneError explains a clone that copyMode "clone" does not allow to fall back.
func cloneError(rel string, err error) error {
	var errno unix.Errno
	errors.As(err, &errno)
	hint := "this filesystem cannot clone files (copy-on-write needs btrfs, XFS with reflink or bcachefs on Linux, APFS on macOS); " +
		"put the source and storagePath on such a filesystem, or pass copyMode \"auto\" to allow ordinary copying"
	if errors.Is(err, unix.EXDEV) {
		hint = "the source and storagePath are on different filesystems; put storagePath on the source's filesystem, " +
			"or pass copyMode \"auto\" to allow ordinary copying"
	}
	name := unix.ErrnoName(errno)
	if errno == unix.EOPNOTSUPP { // the same number as ENOTSUP on Linux; say it as the docs do
		name = "EOPNOTSUPP"
	}
	return &detailError{
		kind:  ErrCloneUnsupported,
		msg:   fmt.Sprintf("clone %q: %v (%s): %s", rel, errno, name, hint),
		cause: err,
	}
}

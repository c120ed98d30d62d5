package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// createAt creates a new private file dirfd/name; it fails if anything is already there,
// so a planted symlink or hard link is never written through.
func createAt(dirfd int, name string) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
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

// placeFile creates dirfd/name holding src's content: a clone when the filesystems
// allow it, otherwise an ordinary copy if allowCopy. The caller finishes the file.
func placeFile(src *os.File, dirfd int, name string, allowCopy bool, memo *cloneMemo) (f *os.File, cloned bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return nil, false, &os.PathError{Op: "fstat", Path: src.Name(), Err: err}
	}
	dev := uint64(st.Dev)
	if !allowCopy || !memo.cannot(dev) {
		f, err = cloneAt(src, dirfd, name)
		if err == nil {
			return f, true, nil
		}
		if !allowCopy || !cloneUnsupported(err) {
			return nil, false, err
		}
		memo.mark(dev)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, false, fmt.Errorf("rewinding %s: %w", src.Name(), err)
	}
	if f, err = createAt(dirfd, name); err != nil {
		return nil, false, err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		unix.Unlinkat(dirfd, name, 0)
		return nil, false, fmt.Errorf("copying %s: %w", src.Name(), err)
	}
	return f, false, nil
}

// finishFile gives a placed file its final permission bits and mtime, makes it durable
// if asked (anything about to be renamed into a host tree), and closes it.
func finishFile(f *os.File, dirfd int, name string, perm uint32, mtime int64, durable bool) error {
	err := unix.Fchmod(int(f.Fd()), perm)
	if err == nil {
		err = setTimes(dirfd, name, mtime)
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("finishing %s: %w", name, err)
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

package store

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/nofollow"
)

// Helpers that resolve every path beneath an open directory one component at a time with
// O_NOFOLLOW. os.Root would follow symlinks that stay inside the root; here a symlink
// anywhere on the way is an error, so nothing an agent or host writer swaps in can
// redirect a read of the working tree or a write into the host.

const openDirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// root is an open directory tree. Paths given to its methods are slash-separated,
// relative, clean, and "" for the root itself.
type root struct {
	fd   int
	path string // for messages only; never used to reach files
	role string // which of autobox's places it is (space.go), for messages
}

func openRoot(p string) (*root, error) {
	fd, err := openDirPath(p)
	if err != nil {
		return nil, err
	}
	return &root{fd: fd, path: p}, nil
}

// openDirPath opens directory p, absolute and canonical (a workspace's source
// or storage, checked so at create), without following a symbolic link
// anywhere on the way: a call with a rw mount of an ancestor of p can replace a
// directory on the way with a link, and a sync through it would write into
// wherever the link leads, shown in status as an ordinary change of the
// workspace.
func openDirPath(p string) (int, error) { return nofollow.OpenDir(p) }

func (r *root) Close() error { return unix.Close(r.fd) }

func (r *root) errorf(op, rel string, err error) error {
	return &os.PathError{Op: op, Path: path.Join(r.path, rel), Err: err}
}

// openDir opens directory rel beneath r.
func (r *root) openDir(rel string) (int, error) {
	fd, err := unix.Openat(r.fd, ".", openDirFlags, 0)
	if err != nil {
		return -1, r.errorf("open", "", err)
	}
	if rel == "" {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			unix.Close(fd)
			return -1, r.errorf("open", rel, unix.EINVAL)
		}
		next, err := unix.Openat(fd, c, openDirFlags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, r.errorf("open", rel, err)
		}
		fd = next
	}
	return fd, nil
}

// parent opens the directory containing rel and returns it with rel's last component.
func (r *root) parent(rel string) (int, string, error) {
	dir, base := path.Split(rel)
	fd, err := r.openDir(strings.TrimSuffix(dir, "/"))
	return fd, base, err
}

// lstat describes rel without following it; ok is false when nothing is there.
func (r *root) lstat(rel string) (e entry, ok bool, err error) {
	pfd, base, err := r.parent(rel)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return entry{}, false, nil // an ancestor is missing, a file or a link: a scan would not list rel
	}
	if err != nil {
		return entry{}, false, err
	}
	defer unix.Close(pfd)
	return lstatAt(pfd, base)
}

func lstatAt(dirfd int, name string) (e entry, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return entry{}, false, nil
		}
		return entry{}, false, &os.PathError{Op: "lstat", Path: name, Err: err}
	}
	e = entryOf(&st)
	if e.typ == unix.S_IFLNK {
		if e.link, err = readlinkAt(dirfd, name); err != nil {
			return entry{}, false, err
		}
	}
	return e, true, nil
}

func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: name, Err: err}
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// openFile opens regular file rel beneath r for reading. O_NONBLOCK keeps a FIFO swapped
// in after a scan from blocking the open; the type is checked before the flag is cleared.
func (r *root) openFile(rel string) (*os.File, error) {
	pfd, base, err := r.parent(rel)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	return openFileAt(pfd, base, path.Join(r.path, rel))
}

func openFileAt(dirfd int, name, display string) (*os.File, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: display, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: display, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", display, ErrChanged)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: display, Err: err}
	}
	return os.NewFile(uintptr(fd), display), nil
}

// dirent is a directory entry and its type (S_IFMT bits), 0 if unknown.
type dirent struct {
	name string
	typ  uint32
}

// readNames lists a directory, sorted so every walk is deterministic.
func readNames(dirfd int) ([]string, error) {
	fd, err := unix.Openat(dirfd, ".", openDirFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// removeAllAt deletes name beneath dirfd and everything under it, never following a
// symlink. Directories without owner write or search permission are opened up first,
// because a copied read-only tree cannot otherwise be emptied by its non-root owner.
func removeAllAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return &os.PathError{Op: "unlink", Path: name, Err: err}
	}
	fd, err := unix.Openat(dirfd, name, openDirFlags, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if st.Mode&0o700 != 0o700 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return &os.PathError{Op: "chmod", Path: name, Err: err}
		}
	}
	names, err := readNames(fd)
	if err != nil {
		return &os.PathError{Op: "readdir", Path: name, Err: err}
	}
	for _, n := range names {
		if err := removeAllAt(fd, n); err != nil {
			return fmt.Errorf("in %s: %w", name, err)
		}
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

// removeBelow deletes dir/name without following links in name's subtree.
func removeBelow(dir, name string) error {
	r, err := openRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := removeAllAt(r.fd, name); err != nil {
		return fmt.Errorf("removing %s: %w", path.Join(dir, name), err)
	}
	return nil
}

// setTimes sets name's access and modification times (nanoseconds) without following
// a symlink. It is only used on entries autobox itself just created.
func setTimes(dirfd int, name string, mtime int64) error {
	ts := []unix.Timespec{unix.NsecToTimespec(mtime), unix.NsecToTimespec(mtime)}
	if err := unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimes", Path: name, Err: err}
	}
	return nil
}

// fchmodDirAt sets a directory's permission bits through a descriptor, so a symlink
// swapped in for it is refused (O_NOFOLLOW) instead of having its target changed.
func fchmodDirAt(dirfd int, name string, perm uint32) error {
	fd, err := unix.Openat(dirfd, name, openDirFlags, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, perm); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return nil
}

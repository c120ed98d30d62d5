package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// cloneAt creates dirfd/name as an APFS clone of src with fclonefileat, which also
// carries extended attributes and ACLs. CLONE_NOFOLLOW keeps name from being a link.
func cloneAt(src *os.File, dirfd int, name string) (*os.File, error) {
	if err := unix.Fclonefileat(int(src.Fd()), dirfd, name, unix.CLONE_NOFOLLOW); err != nil {
		return nil, err
	}
	// Read-only is enough for fchmod and fsync, and works on a clone of a 0444 file.
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// syncFS has no macOS equivalent; an fsync of the directory is the closest cheap step.
func syncFS(fd int) error { return unix.Fsync(fd) }

// renameNoReplace renames like renameat but fails with EEXIST if the target exists, so
// a file that appeared on the host after the recheck is never clobbered.
func renameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_EXCL)
}

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// cloneAt creates dirfd/name as a copy-on-write clone of src with FICLONE. The new file
// is private (0600) until the caller sets its final mode.
func cloneAt(src *os.File, dirfd int, name string) (*os.File, error) {
	f, err := createAt(dirfd, name)
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlFileClone(int(f.Fd()), int(src.Fd())); err != nil {
		f.Close()
		unix.Unlinkat(dirfd, name, 0)
		return nil, err
	}
	return f, nil
}

// syncFS flushes the whole filesystem holding fd: one call instead of an fsync per
// cloned file at the end of create.
func syncFS(fd int) error { return unix.Syncfs(fd) }

// renameNoReplace renames like renameat but fails with EEXIST if the target exists, so
// a file that appeared on the host after the recheck is never clobbered.
func renameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_NOREPLACE)
}

package store

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// cloneAt creates dirfd/name as an APFS clone of src with fclonefileat, which also
// carries extended attributes, ACLs and src's mode (so hasPerm is false: the caller
// sets perm). CLONE_NOFOLLOW keeps name from being a link.
func cloneAt(src, dirfd int, name string, perm uint32) (fd int, hasPerm bool, err error) {
	if err := unix.Fclonefileat(src, dirfd, name, unix.CLONE_NOFOLLOW); err != nil {
		return -1, false, err
	}
	// Read-only is enough for fchmod and fsync, and works on a clone of a 0444 file.
	fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
		return -1, false, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, false, nil
}

// umaskKeeps would need the umask, which macOS offers only through umask(2), whose
// read is a write; files are always chmodded there.
func umaskKeeps(perm uint32) bool { return false }

// syncFS has no macOS equivalent; an fsync of the directory is the closest cheap step.
func syncFS(fd int) error { return unix.Fsync(fd) }

// renameNoReplace renames like renameat but fails with EEXIST if the target exists, so
// a file that appeared on the host after the recheck is never clobbered.
func renameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_EXCL)
}

// readDirents lists directory fd with the types the directory reports.
func readDirents(fd int) ([]dirent, error) {
	dfd, err := unix.Openat(fd, ".", openDirFlags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), ".")
	defer f.Close()
	ents, err := f.ReadDir(-1)
	out := make([]dirent, 0, len(ents))
	for _, e := range ents {
		var typ uint32
		switch t := e.Type(); {
		case t.IsRegular():
			typ = unix.S_IFREG
		case t.IsDir():
			typ = unix.S_IFDIR
		case t&fs.ModeSymlink != 0:
			typ = unix.S_IFLNK
		}
		out = append(out, dirent{e.Name(), typ}) // other types: 0, the caller lstats
	}
	return out, err
}

// renameExchange swaps two entries atomically (any types, directories included).
func renameExchange(olddir int, oldname string, newdir int, newname string) error {
	return unix.RenameatxNp(olddir, oldname, newdir, newname, unix.RENAME_SWAP)
}

// mountOf names where the filesystem holding r is mounted.
func mountOf(r *root) string {
	var st unix.Statfs_t
	if unix.Fstatfs(r.fd, &st) != nil {
		return ""
	}
	return unix.ByteSliceToString(st.Mntonname[:])
}

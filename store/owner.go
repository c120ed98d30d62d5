package store

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Working trees for commands of another uid. A root server without namespaces never
// runs commands as root: they run as an unprivileged uid (Options.WorkOwner), which
// could neither reach nor write a working tree that is root's and 0700 like the rest
// of a workspace. So, with WorkOwner set, create gives the working tree (every file,
// directory and link in it, links not followed) to that uid and gid, and leaves the
// directories above it searchable, not readable, by others (0711): the workspace's own
// directory and the default storage. The baseline and the manifest stay the server's
// alone (0700). Ownership is not part of what status and sync compare, and a merge
// that rewrites a file keeps its owner (writeWork).

// Owner is a uid and gid.
type Owner struct{ UID, GID int }

// idDirMode is the mode of <storage>/<id>, and of the directories autobox makes for
// the default storage.
func (s *Store) idDirMode() uint32 {
	if s.workOwner != nil {
		return 0o711
	}
	return 0o700
}

// searchable lets WorkOwner search the default storage (made by autobox).
func (s *Store) searchable(dir string) error {
	if s.workOwner == nil {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o011 != 0o011 {
		return os.Chmod(dir, mode|0o011)
	}
	return nil
}

// giveWork gives the working tree open at fd (path, for messages) to WorkOwner.
func (s *Store) giveWork(fd int, path string) error {
	if s.workOwner == nil {
		return nil
	}
	if err := unix.Fchown(fd, s.workOwner.UID, s.workOwner.GID); err != nil {
		return fmt.Errorf("giving %s to uid %d: %w", path, s.workOwner.UID, err)
	}
	return chownBelow(fd, path, s.workOwner.UID, s.workOwner.GID)
}

// chownBelow gives every entry below the directory open at fd to uid and gid, without
// following links.
func chownBelow(fd int, path string, uid, gid int) error {
	names, err := readDirNames(fd)
	if err != nil {
		return fmt.Errorf("listing %s: %w", path, err)
	}
	for _, n := range names {
		if err := unix.Fchownat(fd, n, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fmt.Errorf("giving %s/%s to uid %d: %w", path, n, uid, err)
		}
		sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // not a directory
		}
		err = chownBelow(sub, path+"/"+n, uid, gid)
		unix.Close(sub)
		if err != nil {
			return err
		}
	}
	return nil
}

// readDirNames lists the directory open at fd (without . and ..), from its start.
func readDirNames(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	if _, err := unix.Seek(dup, 0, 0); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

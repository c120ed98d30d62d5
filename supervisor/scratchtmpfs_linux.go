package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// privateDirOn makes a private dir for scratch dirs in base if base is a
// tmpfs fit for them (see scratchtmpfs.go), and returns its canonical path.
func privateDirOn(base string) (string, error) {
	if !filepath.IsAbs(base) {
		return "", fmt.Errorf("%s: not an absolute path", base)
	}
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		return "", err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(real, &fs); err != nil {
		return "", fmt.Errorf("statfs %s: %w", real, err)
	}
	switch {
	case fs.Type != unix.TMPFS_MAGIC:
		return "", fmt.Errorf("%s is not a tmpfs", real)
	case fs.Flags&(unix.ST_NOEXEC|unix.ST_RDONLY) != 0:
		return "", fmt.Errorf("%s is mounted noexec or read-only", real)
	case !tmpfsRoom(real):
		return "", fmt.Errorf("%s has less than %d MB free", real, tmpfsFloor>>20)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if fi.Mode()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return "", fmt.Errorf("%s is writable by all without the sticky bit", real)
	}
	dir, err := os.MkdirTemp(real, scratchPrefix())
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o777 != 0o700 {
		os.Remove(dir)
		return "", fmt.Errorf("%s is not a private dir of this process's", dir)
	}
	return dir, nil
}

// tmpfsRoom reports whether the filesystem of dir keeps tmpfsFloor free.
func tmpfsRoom(dir string) bool {
	var fs unix.Statfs_t
	return unix.Statfs(dir, &fs) == nil && fs.Bavail*uint64(fs.Bsize) >= tmpfsFloor
}

// ownDir reports whether dir is a directory (not a link) owned by this
// process's effective uid.
func ownDir(dir string) bool {
	var st unix.Stat_t
	return unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid()
}

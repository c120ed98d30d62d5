package task

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutableFL = 0x00000010

// setImmutable sets or clears the immutable attribute of the regular file path. An immutable
// file cannot be written, replaced, renamed, linked or removed by anyone, root included,
// until the attribute is cleared, which needs CAP_LINUX_IMMUTABLE: a sandboxed harness has
// no capabilities, and a container gets none by default. It fails where autobox lacks the
// capability or the filesystem lacks the attribute.
func setImmutable(path string, on bool) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s: not a regular file", path)
	}
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return &os.PathError{Op: "FS_IOC_GETFLAGS", Path: path, Err: err}
	}
	want := flags &^ fsImmutableFL
	if on {
		want = flags | fsImmutableFL
	}
	if want == flags {
		return nil
	}
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, want); err != nil {
		return &os.PathError{Op: "FS_IOC_SETFLAGS", Path: path, Err: err}
	}
	return nil
}

// isImmutable reports whether path is a regular file with the immutable attribute.
func isImmutable(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	return err == nil && flags&fsImmutableFL != 0
}

package nofollow

import (
	"strings"

	"golang.org/x/sys/unix"
)

// openDir opens directory p with no symbolic link on its path: ENOTDIR at the
// first that is one. The directories on the way are opened with O_PATH, which
// needs the search permission a path walk needs, no more.
func openDir(p string) (int, error) {
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return unix.Open("/", dirFlags, 0)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, c := range parts {
		flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			flags = dirFlags
		}
		next, err := unix.Openat(fd, c, flags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

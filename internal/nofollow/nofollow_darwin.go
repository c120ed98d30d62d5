package nofollow

import "golang.org/x/sys/unix"

// openDir opens directory p with no symbolic link on its path (macOS 11's
// O_NOFOLLOW_ANY: ELOOP if there is one).
func openDir(p string) (int, error) {
	return unix.Open(p, dirFlags|unix.O_NOFOLLOW_ANY, 0)
}

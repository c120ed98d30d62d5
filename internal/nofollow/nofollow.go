// Package nofollow opens a directory by its absolute path with no symbolic link
// anywhere on the way. O_NOFOLLOW looks at the last name only, and os.OpenRoot
// follows every link: a path checked canonical when a call arrived may go
// through a link by the time it is opened, put there by a command with a rw
// mount above it, and what is opened then is the link's target.
package nofollow

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// dirFlags open the directory itself: for reading, never a link.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// OpenDir opens directory p (absolute) for reading, refusing a symbolic link
// anywhere on its path with an error that names it. The caller closes the fd.
func OpenDir(p string) (int, error) {
	if !path.IsAbs(p) {
		return -1, &os.PathError{Op: "open", Path: p, Err: unix.EINVAL}
	}
	fd, err := openDir(p)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		// The outermost link is the one the walk met.
		for at := p; at != "/"; at = path.Dir(at) {
			if fi, lerr := os.Lstat(at); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
				err = fmt.Errorf("%s is a symbolic link, which it was not when the path was checked (a call with a rw mount of its directory may have made it): nothing is read or written through it", at)
			}
		}
	}
	return -1, &os.PathError{Op: "open", Path: p, Err: err}
}

// OpenRoot is os.OpenRoot(p) for a p with no symbolic link on its path: the
// root opened is the directory OpenDir reaches, or an error.
func OpenRoot(p string) (*os.Root, error) {
	fd, err := OpenDir(p)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	want, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(p)
	if err != nil {
		return nil, err
	}
	// A link swapped in between the two opens took os.OpenRoot elsewhere.
	if got, err := r.Stat("."); err != nil || !os.SameFile(got, want) {
		r.Close()
		if err == nil {
			err = fmt.Errorf("%s changed while it was opened (a directory on its path replaced by a symbolic link?): nothing is read or written through it", p)
		}
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return r, nil
}

package ceiling

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// The ceiling file has one name. The never-mount rule holds every path on the
// way to the file (ownpaths.go), but a hard link is another name of the same
// file that no path on that way leads to: a dotfiles directory or a backup
// holding one, mounted read-write by a call, lets the call rewrite the ceiling
// in place, and the running server reads it again within a second (live.go).
// No rule can find every other name of a file, so a file with more than one is
// not read at all: a server does not start on it, and a running one keeps the
// ceiling it last read, saying why. Renaming a new file over it (as "always"
// answers do, update.go) or copying it gives it one name again.

// ErrHardLinked is the error of a ceiling file with more than one name.
var ErrHardLinked = errors.New("a call that may write a directory holding another of its names could rewrite it: give it one name (cp FILE FILE.new && mv FILE.new FILE)")

// readOneName reads the file at path (following links) if it has one name.
func readOneName(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
		return nil, fmt.Errorf("it has %d names (hard links): %w", st.Nlink, ErrHardLinked)
	}
	return io.ReadAll(f)
}

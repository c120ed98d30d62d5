package ceiling

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// CheckNamed refuses a ceiling file named with --policy that does not exist.
// A missing file at the default path is an empty ceiling: the user has not
// written one. A missing file named on the command line is a typo or a file
// moved away, and serving without it would open every rule it was meant to
// hold: the server does not start, and autobox policy says so. (A named file
// removed while a server runs is handled by Live: the ceiling last read
// stays.)
func (f *Flags) CheckNamed() error {
	if f == nil || f.File == "" {
		return nil
	}
	if _, err := os.Stat(f.File); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--policy %s: no such file. A ceiling file named on the command line must exist, or a typo in its path would open every rule: "+
			"fix the path, write {} there for a ceiling without rules, or leave --policy out to use %s (which may be absent)", f.File, DefaultFile())
	}
	return nil
}

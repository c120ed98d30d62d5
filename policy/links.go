package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A host path that a caller approves must be the directory that is used. A
// symbolic link anywhere on it could have been written by an earlier call
// with a rw mount of the directory that holds it (`ln -s /root/private
// proj/out`), and would take a later mount of proj/out, a workspace's source
// or its storage somewhere else. Which directories some call could ever have
// written is not knowable (any directory of the user's may have been mounted
// rw by another server, or yesterday), so the rule is the simple sound one: a
// host path is refused unless it is already canonical, and the error names the
// link and its target, so that the caller can give the real path on purpose.

// NotCanonical returns an invalid-argument error naming the first symbolic
// link on path (as given, after cleaning) when real, its canonical form,
// differs; nil when path is canonical. what names the parameter ("hostPath",
// "storagePath").
func NotCanonical(what, path, real string) error {
	if msg := LinkProblem(what, path, real); msg != "" {
		return invalid("%s", msg)
	}
	return nil
}

// LinkProblem is NotCanonical's text, "" when path is canonical.
func LinkProblem(what, path, real string) string {
	if filepath.Clean(path) == real {
		return ""
	}
	link, target := firstLink(filepath.Clean(path))
	if link == "" {
		return fmt.Sprintf("%s %s is not canonical (it resolves to %s): give %s", what, path, real, real)
	}
	return fmt.Sprintf("%s %s goes through the symbolic link %s (-> %s) and resolves to %s: a link in a directory a call can write could have been made by that call, so autobox takes only canonical host paths; give %s if that is what you mean", what, path, link, target, real, real)
}

// firstLink is the first prefix of the absolute path p that is a symbolic
// link, and what it points to.
func firstLink(p string) (link, target string) {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", ""
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(cur)
			return cur, t
		}
	}
	return "", ""
}

// CanonicalMaybeMissing resolves symbolic links in the longest existing prefix
// of p, so that a path that does not exist yet still compares with canonical
// paths.
func CanonicalMaybeMissing(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent := filepath.Dir(p)
	if parent == p {
		return p
	}
	return filepath.Join(CanonicalMaybeMissing(parent), filepath.Base(p))
}

package store

import (
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// maxLinkHops matches Linux's limit on symlinks followed in one resolution; more means
// a loop for any practical tree.
const maxLinkHops = 40

// proposed is the entry at q in the host tree as it will be after the sync: the
// working tree's version where the workspace changed q, the host's elsewhere.
func (pl *plan) proposed(q string) (entry, bool) {
	if _, changed := pl.ws[q]; changed {
		e, ok := pl.work.get(q)
		return e, ok
	}
	return pl.hostAt(q)
}

// checkLink applies the seed's rules to a new or modified symlink at p and returns why
// it may not be synced ("" if it may). The target must be relative and resolve inside
// the workspace, through other links too, judged on the proposed host tree; it must not
// loop or point at a directory containing the link, and must not pass through an
// excluded path, which is outside the tracked baseline. A dangling target is judged
// lexically: it may not leave the root either.
func (pl *plan) checkLink(p, target string) string {
	if path.IsAbs(target) {
		return fmt.Sprintf("symlink target %q is absolute; synced links must be relative", target)
	}
	var cur []string
	if dir := parentOf(p); dir != "" {
		cur = strings.Split(dir, "/")
	}
	rest := strings.Split(target, "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return fmt.Sprintf("symlink target %q leaves the workspace", target)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		cur = append(cur, c)
		q := strings.Join(cur, "/")
		if pl.ex.match(q) {
			return fmt.Sprintf("symlink target %q resolves through excluded path %s, which is outside the tracked baseline", target, q)
		}
		e, ok := pl.proposed(q)
		switch {
		case !ok || e.isDir():
		case e.typ == unix.S_IFLNK:
			if hops++; hops > maxLinkHops {
				return fmt.Sprintf("symlink target %q loops (more than %d links deep)", target, maxLinkHops)
			}
			if path.IsAbs(e.link) {
				return fmt.Sprintf("symlink target %q resolves through %s, a link to the absolute path %q", target, q, e.link)
			}
			cur = cur[:len(cur)-1]
			rest = append(strings.Split(e.link, "/"), rest...)
		case len(rest) > 0:
			// A file in the middle of the path: the link cannot resolve at all, so it
			// cannot reach anything outside either.
			return ""
		}
	}
	dest := strings.Join(cur, "/")
	if e, ok := pl.proposed(dest); (ok && e.isDir() || dest == "") && (dest == "" || strings.HasPrefix(p, dest+"/")) {
		return fmt.Sprintf("symlink target %q points to %s, a directory containing the link, which makes the tree cyclic", target, displayRoot(dest))
	}
	return ""
}

func displayRoot(rel string) string {
	if rel == "" {
		return "the workspace root"
	}
	return rel
}

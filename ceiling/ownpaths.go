package ceiling

import (
	"os"
	"path/filepath"
	"strings"
)

// The way to autobox's own files. The ceiling file, the config directory and
// the state directory are often reached through links: ~/.config/autobox a
// link into a dotfiles repository (GNU stow), policy.json a link into a store
// (home-manager), $XDG_CONFIG_HOME itself a link. A call that may write the
// directory holding such a link may replace the link, and with it the file
// the next call is checked against, though the file the link leads to is
// never mountable. So every path on the way is: the path as written, each
// link met while resolving it (where the link itself lies, its directory
// resolved), and what it resolves to; each is never-mountable as autobox's own
// (not at all, and no directory holding it read-write).

// maxLinks bounds the links followed on one path (the kernel's own bound).
const maxLinks = 40

// wayTo lists the paths on the way to the absolute, clean path p: p itself, every
// symbolic link met while resolving it, each at its own place (its directory
// resolved), and p resolved (as far as it exists; the rest as written). The
// link's text is given beside each link, "" for the others.
func wayTo(p string) []wayStep {
	steps := []wayStep{{Path: p}}
	cur := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || links >= maxLinks {
			// A directory, a file, or missing: missing from here on, the rest
			// is taken as written.
			cur = next
			if err != nil {
				cur = filepath.Join(append([]string{next}, rest...)...)
				rest = nil
			}
			continue
		}
		target, err := os.Readlink(next)
		if err != nil {
			cur = filepath.Join(append([]string{next}, rest...)...)
			break
		}
		links++
		steps = append(steps, wayStep{Path: next, Link: target})
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return append(steps, wayStep{Path: cur})
}

// wayStep is one path on the way to an own path: a symbolic link (Link its
// text) or, Link "", the path as written or as it resolves.
type wayStep struct {
	Path string
	Link string
}

// lexical is p with a leading ~/ resolved against the real home, absolute and
// clean, its links not resolved.
func lexical(p string) (string, bool) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(RealHome(), strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/"))
	}
	if !filepath.IsAbs(p) {
		return "", false
	}
	return filepath.Clean(p), true
}

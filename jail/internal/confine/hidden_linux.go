package confine

import (
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// Hidden paths (policy.Sandbox.Hidden): a read-only path with secrets below
// it (/etc and /etc/shadow) gets no rule of its own but one to list it, and a
// rule for each of its entries that is neither hidden nor holds a hidden path
// (those that do are split the same way). Landlock rules hold files, so what
// the host puts at a hidden path later (passwd(1) renames a new shadow over
// the old) has no rule either: it stays unreadable in every mode, with or
// without a private root.
//
// Entries that are not world-readable are left out too, whatever the list
// says: a file only its owner or group may read is no file for every
// command (a root server's commands are uid 0, which owns root's files).
// Symbolic links get no rule: what they lead to is ruled by its own path.

// hiddenRules returns the rules that grant access below dir but for the
// hidden paths (those of hidden below it).
func hiddenRules(dir string, hidden []string, access uint64, noFollow bool) []pathRule {
	key := hiddenKey{dir, strings.Join(hidden, "\x00"), access, noFollow}
	hiddenCache.Lock()
	defer hiddenCache.Unlock()
	if r, ok := hiddenCache.m[key]; ok {
		return r
	}
	rules := splitRules(dir, hidden, access, noFollow, nil)
	if hiddenCache.m == nil {
		hiddenCache.m = map[hiddenKey][]pathRule{}
	}
	hiddenCache.m[key] = rules
	return rules
}

// hiddenCache keeps each split for the life of the process: a pooled launcher
// makes it for its base while it waits, and the call, which asks for the
// same, reuses it (and the prepared ruleset that holds it). An entry made
// since is not in the command's view: a launcher serves one call.
var hiddenCache struct {
	sync.Mutex
	m map[hiddenKey][]pathRule
}

type hiddenKey struct {
	dir, hidden string
	access      uint64
	noFollow    bool
}

func splitRules(dir string, hidden []string, access uint64, noFollow bool, rules []pathRule) []pathRule {
	rules = append(rules, pathRule{dir, unix.LANDLOCK_ACCESS_FS_READ_DIR, noFollow})
	f, err := os.Open(dir)
	if err != nil {
		return rules
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	slices.Sort(names)
	for _, name := range names {
		p := path.Join(dir, name)
		if slices.Contains(hidden, p) {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil || !worldReadable(&st) {
			continue
		}
		if hasHiddenBelow(p, hidden) {
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				rules = splitRules(p, hidden, access, noFollow, rules)
			}
			continue
		}
		rules = append(rules, pathRule{p, access, noFollow})
	}
	return rules
}

// worldReadable reports whether st is a file any user may read, or a
// directory any user may list and enter; symbolic links are not.
func worldReadable(st *unix.Stat_t) bool {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return false
	case unix.S_IFDIR:
		return st.Mode&0o005 == 0o005
	}
	return st.Mode&0o004 != 0
}

// rulesBut returns the rules that grant access beneath path but for the hidden
// paths: one rule where none is at or below it, a split (hiddenRules) where some
// are below it, and none where path is or lies in a hidden path.
func rulesBut(path string, hidden []string, access uint64, noFollow bool) []pathRule {
	for _, h := range hidden {
		if policy.Within(path, h) {
			return nil // all of it is hidden
		}
	}
	if h := hiddenBelow(path, hidden); len(h) > 0 {
		return hiddenRules(path, h, access, noFollow)
	}
	return []pathRule{{path, access, noFollow}}
}

// hasHiddenBelow reports whether a hidden path is strictly below p.
func hasHiddenBelow(p string, hidden []string) bool {
	for _, h := range hidden {
		if policy.Within(h, p) && h != p {
			return true
		}
	}
	return false
}

// hiddenBelow returns the hidden paths at or below p.
func hiddenBelow(p string, hidden []string) []string {
	var out []string
	for _, h := range hidden {
		if policy.Within(h, p) {
			out = append(out, h)
		}
	}
	return out
}

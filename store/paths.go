package store

import (
	"fmt"
	"path"
	"strings"
)

// Paths named by a caller (sync, status, resolve, merge take "paths"): validated
// first, then used to narrow a plan to the changes at or beneath them.

// cleanPaths validates the paths a caller named in parameter param: relative to the
// workspace root as status lists them (or absolute beneath its sandboxPath), without
// "..", NUL or an empty name. Errors name the parameter and the entry.
func cleanPaths(param, sandbox string, paths []string) ([]string, error) {
	if paths == nil {
		return nil, nil
	}
	if len(paths) == 0 {
		return nil, invalidf("%s is empty: name the paths (as status lists them), or leave %s out", param, param)
	}
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		name := fmt.Sprintf("%s[%d]", param, i)
		switch {
		case p == "":
			return nil, invalidf("%s is empty: give a path relative to the workspace root, as status lists it", name)
		case strings.ContainsRune(p, 0):
			return nil, invalidf("%s %q contains a NUL byte", name, p)
		}
		rel := p
		if path.IsAbs(p) {
			r, ok := strings.CutPrefix(path.Clean(p), sandbox+"/")
			if !ok {
				return nil, invalidf("%s %q is absolute and not beneath the workspace's sandboxPath %s: give it relative to the workspace root, as status lists it", name, p, sandbox)
			}
			rel = r
		}
		for _, c := range strings.Split(rel, "/") {
			if c == ".." {
				return nil, invalidf("%s %q contains \"..\": paths stay inside the workspace", name, p)
			}
		}
		rel = path.Clean(rel)
		if rel == "." {
			return nil, invalidf("%s %q names the workspace root: leave %s out for the whole workspace", name, p, param)
		}
		out = append(out, rel)
	}
	return out, nil
}

// beneath reports whether p is q or inside it.
func beneath(p, q string) bool {
	return p == q || strings.HasPrefix(p, q+"/")
}

// restrict narrows the plan to the changes at or beneath paths (from cleanPaths,
// named in param), plus the directories they need: a path put into a directory the
// workspace adds (or makes from a file) needs that directory. The changes left out
// stay pending: a later status lists them. Conflicts are found again, among the
// changes kept only.
func (pl *plan) restrict(param string, paths []string) error {
	keep := map[string]bool{}
	for i, q := range paths {
		found := false
		for p := range pl.ws {
			if beneath(p, q) {
				keep[p], found = true, true
			}
		}
		if !found {
			return invalidf("%s[%d] %q: the workspace has no change at or beneath it (status lists the changes)", param, i, q)
		}
	}
	for p := range keep {
		if pl.ws[p] == ActionDelete {
			continue
		}
		ancestors(p, func(a string) bool {
			if act := pl.ws[a]; act == ActionAdd || act == ActionReplace {
				if w, ok := pl.work.get(a); ok && w.isDir() {
					keep[a] = true
				}
			}
			return false
		})
	}
	for p := range pl.ws {
		if !keep[p] {
			delete(pl.ws, p)
		}
	}
	pl.collapse()
	pl.findConflicts()
	return nil
}

// pendingOf lists the changes of all that are not in kept.
func pendingOf(all, kept []Change) []Change {
	in := map[string]bool{}
	for _, c := range kept {
		in[c.Path] = true
	}
	out := []Change{}
	for _, c := range all {
		if !in[c.Path] {
			out = append(out, c)
		}
	}
	return out
}

package store

import (
	"path"
	"strings"
)

// excludes are normalized relative paths whose subtrees are neither copied nor synced.
type excludes []string

// parseExcludes validates and normalizes create's excludes: exact relative paths, no
// globs, no "..", no absolute paths, no empty entries; duplicates are dropped.
func parseExcludes(in []string) (excludes, error) {
	seen := map[string]bool{}
	var out excludes
	for _, raw := range in {
		switch {
		case strings.TrimSpace(raw) == "":
			return nil, invalidf("excludes: empty entry")
		case strings.ContainsAny(raw, "*?[") || strings.ContainsRune(raw, 0):
			return nil, invalidf("excludes: %q: glob characters are not expanded; list exact relative paths", raw)
		case path.IsAbs(raw):
			return nil, invalidf("excludes: %q: must be relative to hostPath", raw)
		}
		for _, c := range strings.Split(raw, "/") {
			if c == ".." {
				return nil, invalidf("excludes: %q: \"..\" is not allowed", raw)
			}
		}
		p := path.Clean(raw)
		if p == "." {
			return nil, invalidf("excludes: %q names the whole source", raw)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// match reports whether rel is an excluded path or lies beneath one.
func (ex excludes) match(rel string) bool {
	for _, e := range ex {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return true
		}
	}
	return false
}

// matchIn is match(joinRel(dir, name)) without building the path, which a scan would
// otherwise do for every entry.
func (ex excludes) matchIn(dir, name string) bool {
	for _, e := range ex {
		if dir == "" {
			if e == name {
				return true
			}
			continue
		}
		if strings.HasPrefix(e, dir) && len(e) == len(dir)+1+len(name) && e[len(dir)] == '/' && e[len(dir)+1:] == name {
			return true // e is the path itself
		}
		if strings.HasPrefix(dir, e) && (len(dir) == len(e) || dir[len(e)] == '/') {
			return true // e is dir or above it
		}
	}
	return false
}

// under returns an excluded path strictly beneath directory rel, if any.
func (ex excludes) under(rel string) (string, bool) {
	for _, e := range ex {
		if strings.HasPrefix(e, rel+"/") {
			return e, true
		}
	}
	return "", false
}

// parentOf returns rel's parent ("" at the top level).
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// ancestors calls fn for each proper ancestor of rel, nearest first, until fn is true.
func ancestors(rel string, fn func(a string) bool) {
	for a := parentOf(rel); a != ""; a = parentOf(a) {
		if fn(a) {
			return
		}
	}
}

// joinRel joins a relative directory ("" for the root) and a name.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

package store

import (
	"slices"
	"strings"
)

// tree is a directory tree as a scan records it, without its root: each directory's
// entries sorted by name, keyed by the directory's slash-separated relative path (""
// for the root). Every directory entry has a listing of its own, possibly empty.
//
// Listings rather than a map of every path: a scan produces them per directory, two
// trees are compared by merging listings name by name, and the manifest stores them
// as they are, so the common operations hash no paths.
type tree map[string][]named

type named struct {
	name string
	e    entry
}

func byName(c named, name string) int { return strings.Compare(c.name, name) }

// splitRel splits rel into its directory ("" at the top) and last component.
func splitRel(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}

func (t tree) get(p string) (entry, bool) {
	dir, name := splitRel(p)
	l := t[dir]
	if i, ok := slices.BinarySearchFunc(l, name, byName); ok {
		return l[i].e, true
	}
	return entry{}, false
}

// set records e at p, whose directory must be in the tree. A new directory gets an
// empty listing; a directory replaced by something else loses its subtree.
func (t tree) set(p string, e entry) {
	dir, name := splitRel(p)
	l := t[dir]
	i, ok := slices.BinarySearchFunc(l, name, byName)
	if ok {
		if l[i].e.isDir() && !e.isDir() {
			t.dropBelow(p)
		}
		l[i].e = e
	} else {
		t[dir] = slices.Insert(l, i, named{name, e})
	}
	if _, listed := t[p]; e.isDir() && !listed {
		t[p] = []named{}
	}
}

// del removes p and, if it is a directory, its subtree.
func (t tree) del(p string) {
	dir, name := splitRel(p)
	l := t[dir]
	i, ok := slices.BinarySearchFunc(l, name, byName)
	if !ok {
		return
	}
	if l[i].e.isDir() {
		t.dropBelow(p)
	}
	t[dir] = slices.Delete(l, i, i+1)
}

// dropBelow removes the listings of directory p and of every directory beneath it.
func (t tree) dropBelow(p string) {
	prefix := p + "/"
	for d := range t {
		if d == p || strings.HasPrefix(d, prefix) {
			delete(t, d)
		}
	}
}

// count returns how many entries the tree has.
func (t tree) count() int {
	n := 0
	for _, l := range t {
		n += len(l)
	}
	return n
}

// each calls fn for every entry, with its path.
func (t tree) each(fn func(p string, e entry)) {
	for dir, l := range t {
		for _, c := range l {
			fn(joinRel(dir, c.name), c.e)
		}
	}
}

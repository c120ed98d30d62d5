package store

// Bounded listings. A new directory is often a generated tree (a dependency install,
// a build, a cache): listed entry by entry it drowns the changes a reviewer must
// read. So a new directory with more than collapseMin entries beneath it is listed
// as one change with its file count, size and first entries, unless a caller named
// it (or something in it, or above it) in paths. Sync applies it as a whole and
// lists it as one applied change.

import (
	"fmt"
	"sort"
	"strings"

	"unicode/utf8"
)

// collapseMin is the number of entries beneath a new directory up to which its
// entries are listed one by one.
const collapseMin = 20

// firstShown bounds Change.First.
const firstShown = 5

// newDirs finds the new directories to list as one change: for each, the outermost
// added directory, its summary. Entries beneath one map to it in into.
func (pl *plan) newDirs(into map[string]string) map[string]*Change {
	outer := map[string]string{} // added path → outermost added directory above it
	for p, act := range pl.ws {
		if act != ActionAdd {
			continue
		}
		top := ""
		ancestors(p, func(a string) bool {
			if pl.ws[a] != ActionAdd {
				return true
			}
			top = a
			return false
		})
		if top != "" {
			outer[p] = top
		}
	}
	count := map[string]int{}
	for _, top := range outer {
		count[top]++
	}
	sums := map[string]*Change{}
	for top, n := range count {
		if n <= collapseMin || pl.named(top) {
			continue
		}
		sums[top] = &Change{Path: top, Action: ActionAdd}
	}
	for p, top := range outer {
		c := sums[top]
		if c == nil {
			continue
		}
		into[p] = top
		w, _ := pl.work.get(p)
		if !w.isDir() {
			c.Files++
			c.Bytes += w.size
		}
		if parentOf(p) == top {
			name := p[len(top)+1:]
			if w.isDir() {
				name += "/"
			}
			c.First = append(c.First, name)
		}
	}
	for _, c := range sums {
		sort.Strings(c.First)
		if len(c.First) > firstShown {
			c.First = c.First[:firstShown]
		}
	}
	return sums
}

// named reports whether a path a caller named in paths is at, beneath or above p.
func (pl *plan) named(p string) bool {
	for _, q := range pl.expand {
		if beneath(p, q) || beneath(q, p) {
			return true
		}
	}
	return false
}

// summarized says which changes are new directories listed as one, and how to list
// their entries; "" when none is.
func summarized(changes []Change) string {
	var dirs []string
	for _, c := range changes {
		if c.First != nil {
			dirs = append(dirs, c.Path)
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	q := dirs[0]
	if !utf8.ValidString(q) || strings.ContainsAny(q, "\"\\\n") {
		q = "…"
	}
	return fmt.Sprintf("%d new director%s with more than %d entries %s listed as one change (files, bytes, first entries): %s; "+
		"name one in paths (e.g. paths: [\"%s\"]) to list its entries, or sync it as a whole",
		len(dirs), plural(len(dirs), "y", "ies"), collapseMin, plural(len(dirs), "is", "are"), strings.Join(shownDirs(dirs), ", "), q)
}

func shownDirs(dirs []string) []string {
	if len(dirs) > ignoredShown {
		return append(dirs[:ignoredShown:ignoredShown], fmt.Sprintf("and %d more", len(dirs)-ignoredShown))
	}
	return dirs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

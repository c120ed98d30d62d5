package store

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// status's diff: the workspace's changes as a unified diff (git's extended headers:
// "diff --git", "new file mode", "Binary files … differ"), for a person or a model to
// review before sync. It is bounded: a file larger than DiffFileMax on either side
// is summarised in one line, as a binary file is, and the whole text stops before
// DiffTotalMax with a note that says how many files were left out. Files are read
// beneath the baseline and the working tree without following links; a file that
// changes while it is read is summarised, never followed or failed on.

// Bounds of status's diff.
const (
	DiffFileMax  = 1 << 20  // a file larger than this on either side is not diffed
	DiffTotalMax = 64 << 10 // the whole diff text, notes included
)

// diffContext is how many unchanged lines surround each change.
const diffContext = 3

// diffText writes the unified diff of the plan's changes (pl.ws) to a string of at
// most DiffTotalMax bytes; cut says whether files were left out.
func (pl *plan) diffText() (text string, cut bool) {
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range pl.ws {
			if !yield(p) {
				return
			}
		}
	})
	var out strings.Builder
	for i, p := range paths {
		part := pl.diffOne(p)
		if len(part) > diffPartMax {
			part = fmt.Sprintf("diff --git %s %s\n%s: a diff of %d bytes, too large to show with the others; ask status with paths [%s] for it alone\n",
				quotePath("a/"+p), quotePath("b/"+p), quotePath(p), len(part), strconv.Quote(p))
		}
		if out.Len()+len(part) > DiffTotalMax-diffNoteRoom {
			fmt.Fprintf(&out, "[autobox: diff cut at %d KB: %d more changed paths not shown, from %s on; ask status with paths to see them]\n",
				DiffTotalMax>>10, len(paths)-i, quotePath(p))
			return out.String(), true
		}
		out.WriteString(part)
	}
	return out.String(), false
}

// diffNoteRoom keeps room for the note that ends a cut diff; a file whose diff is
// longer than diffPartMax is summarised, so that it does not hide the others.
const (
	diffNoteRoom = 512
	diffPartMax  = DiffTotalMax / 2
)

// diffOne is the diff of one changed path ("" for a directory, whose entries have
// their own).
func (pl *plan) diffOne(p string) string {
	b, bok := pl.base.get(p)
	w, wok := pl.work.get(p)
	if bok && b.isDir() {
		bok = false // a directory replaced by a file reads as the file added
	}
	if wok && w.isDir() {
		wok = false
	}
	if !bok && !wok {
		return ""
	}
	var h strings.Builder
	fmt.Fprintf(&h, "diff --git %s %s\n", quotePath("a/"+p), quotePath("b/"+p))
	switch {
	case !bok:
		fmt.Fprintf(&h, "new file mode %06o\n", w.typ|w.perm)
	case !wok:
		fmt.Fprintf(&h, "deleted file mode %06o\n", b.typ|b.perm)
	case b.typ|b.perm != w.typ|w.perm:
		fmt.Fprintf(&h, "old mode %06o\nnew mode %06o\n", b.typ|b.perm, w.typ|w.perm)
	}
	from, to := "/dev/null", "/dev/null"
	if bok {
		from = quotePath("a/" + p)
	}
	if wok {
		to = quotePath("b/" + p)
	}
	var old, cur []byte
	var why string
	if bok {
		old, why = readForDiff(pl.o.base, p, b)
	}
	if wok && why == "" {
		cur, why = readForDiff(pl.o.work, p, w)
	}
	switch {
	case why != "":
		fmt.Fprintf(&h, "%s: %s\n", quotePath(p), why)
	case string(old) == string(cur):
		// a mode-only change: the header says it all
	case !isText(old) || !isText(cur):
		fmt.Fprintf(&h, "Binary files %s and %s differ\n", from, to)
	default:
		fmt.Fprintf(&h, "--- %s\n+++ %s\n", from, to)
		unifiedHunks(&h, splitLines(old), splitLines(cur), diffContext)
	}
	return h.String()
}

// readForDiff reads p beneath r as scanned (e): a file's content, or a link's
// target; why says, instead, why it is not diffed.
func readForDiff(r *root, p string, e entry) ([]byte, string) {
	switch {
	case e.typ == unix.S_IFLNK:
		return []byte(e.link), ""
	case e.typ != unix.S_IFREG:
		return nil, typeName(e.typ) + ", not diffed"
	case e.size > DiffFileMax:
		return nil, fmt.Sprintf("%d bytes, too large to diff (the limit is %d MB)", e.size, DiffFileMax>>20)
	}
	f, err := r.openFile(p)
	if err != nil {
		return nil, "changed while status read it; run status again"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, DiffFileMax+1))
	if err != nil || len(data) > DiffFileMax {
		return nil, "changed while status read it; run status again"
	}
	return data, ""
}

// quotePath is a path as git prints it: as it is, or Go-quoted when it holds a
// control character, a quote, a backslash or bytes that are not UTF-8, so that a
// name cannot forge a line of the diff.
func quotePath(p string) string {
	if q := strconv.Quote(p); q[1:len(q)-1] != p {
		return q
	}
	return p
}

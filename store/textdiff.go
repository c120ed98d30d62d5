package store

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Line diffs in pure Go, for status's unified diff and merge's three-way merge: no
// diff or diff3 binary is needed. Lines are compared whole, with their newline.
// The matching is Myers' O(ND) algorithm after the common head and tail are set
// aside; past maxEdits differing lines the middle is treated as replaced as a
// whole, which is still a correct diff, only not the shortest.

// maxEdits bounds the work (and memory, ~maxEdits² ints) of one line matching.
const maxEdits = 1200

// splitLines splits text into lines that keep their "\n"; the last may lack one.
func splitLines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// isText reports whether b reads as text: valid UTF-8 without NUL bytes.
func isText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// block is a run of n equal lines, at a in one text and b in the other.
type block struct{ a, b, n int }

// matchLines returns the runs of equal lines between a and b, in order, ending with
// the empty block {len(a), len(b), 0}.
func matchLines(a, b []string) []block {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out []block
	if head > 0 {
		out = append(out, block{0, 0, head})
	}
	for _, p := range matchMiddle(a[head:len(a)-tail], b[head:len(b)-tail]) {
		x, y := p[0]+head, p[1]+head
		if l := len(out) - 1; l >= 0 && out[l].a+out[l].n == x && out[l].b+out[l].n == y {
			out[l].n++
		} else {
			out = append(out, block{x, y, 1})
		}
	}
	if tail > 0 {
		out = append(out, block{len(a) - tail, len(b) - tail, tail})
	}
	return append(out, block{len(a), len(b), 0})
}

// matchMiddle returns pairs (i, j) of equal lines a[i] == b[j], in order. Small
// inputs get Myers' shortest edit path. Larger ones are first cut at anchors, lines
// that occur once in a and once in b (the longest run of them in the same order,
// as patience diff does), and each piece between anchors is matched the same way;
// so a large file with many scattered edits still gets a line-by-line diff.
func matchMiddle(a, b []string) [][2]int {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	if len(a)+len(b) <= maxEdits {
		pairs, _ := myers(a, b)
		return pairs
	}
	anchors := uniqueAnchors(a, b)
	if len(anchors) == 0 {
		pairs, _ := myers(a, b) // none past maxEdits: the whole piece reads as replaced
		return pairs
	}
	var out [][2]int
	i, j := 0, 0
	for _, an := range append(anchors, [2]int{len(a), len(b)}) {
		for _, p := range matchMiddle(a[i:an[0]], b[j:an[1]]) {
			out = append(out, [2]int{p[0] + i, p[1] + j})
		}
		if an[0] < len(a) {
			out = append(out, an)
		}
		i, j = an[0]+1, an[1]+1
	}
	return out
}

// uniqueAnchors returns the pairs (i, j) of lines that occur exactly once in a and
// once in b, a[i] == b[j], keeping the longest chain increasing in both i and j.
func uniqueAnchors(a, b []string) [][2]int {
	type seen struct{ na, nb, i, j int }
	count := map[string]*seen{}
	for i, l := range a {
		c := count[l]
		if c == nil {
			c = &seen{}
			count[l] = c
		}
		c.na++
		c.i = i
	}
	for j, l := range b {
		if c := count[l]; c != nil {
			c.nb++
			c.j = j
		}
	}
	var cand [][2]int // by i
	for i, l := range a {
		if c := count[l]; c.na == 1 && c.nb == 1 {
			cand = append(cand, [2]int{i, c.j})
		}
	}
	// Longest increasing subsequence of j (patience sorting with back links).
	var tops []int // tops[k]: index in cand of the smallest j ending a chain of k+1
	prev := make([]int, len(cand))
	for x, c := range cand {
		k := sort.Search(len(tops), func(k int) bool { return cand[tops[k]][1] >= c[1] })
		if k > 0 {
			prev[x] = tops[k-1]
		} else {
			prev[x] = -1
		}
		if k == len(tops) {
			tops = append(tops, x)
		} else {
			tops[k] = x
		}
	}
	if len(tops) == 0 {
		return nil
	}
	out := make([][2]int, len(tops))
	for k, x := len(tops)-1, tops[len(tops)-1]; k >= 0; k, x = k-1, prev[x] {
		out[k] = cand[x]
	}
	return out
}

// myers returns the pairs (i, j) of equal lines a[i] == b[j] on a shortest edit
// path, in order; ok is false (and no pairs) when more than maxEdits edits are
// needed.
func myers(a, b []string) (pairs [][2]int, ok bool) {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return nil, true
	}
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int // trace[d][k+d]: the furthest x on diagonal k after d edits
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
				return backtrack(trace, n, m), true
			}
		}
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

// backtrack walks the trace of myers back from (n, m) and collects the diagonal
// moves, the equal lines.
func backtrack(trace [][]int, n, m int) [][2]int {
	var pairs [][2]int
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1]
		at := func(k int) int { return prev[k+d-1] }
		k := x - y
		var pk int
		if k == -d || k != d && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		mx := px // after the one edit of step d: down (an insertion) or right (a deletion)
		if pk == k-1 {
			mx = px + 1
		}
		for x > mx {
			x, y = x-1, y-1
			pairs = append(pairs, [2]int{x, y})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		pairs = append(pairs, [2]int{x, y})
	}
	for i, j := 0, len(pairs)-1; i < j; i, j = i+1, j-1 {
		pairs[i], pairs[j] = pairs[j], pairs[i]
	}
	return pairs
}

// unifiedHunks writes the hunks (with ctx lines of context) that turn a into b.
func unifiedHunks(w *strings.Builder, a, b []string, ctx int) {
	blocks := matchLines(a, b)
	// A change is the gap before each block; hunks join changes whose equal run
	// between them is at most 2*ctx lines.
	type change struct{ a0, a1, b0, b1 int }
	var changes []change
	i, j := 0, 0
	for _, bl := range blocks {
		if i < bl.a || j < bl.b {
			changes = append(changes, change{i, bl.a, j, bl.b})
		}
		i, j = bl.a+bl.n, bl.b+bl.n
	}
	for len(changes) > 0 {
		g := 1
		for g < len(changes) && changes[g].a0-changes[g-1].a1 <= 2*ctx {
			g++
		}
		first, last := changes[0], changes[g-1]
		lead := min(ctx, first.a0, first.b0) // equal on both sides: the run before a change
		a0, b0 := first.a0-lead, first.b0-lead
		trail := min(ctx, len(a)-last.a1, len(b)-last.b1)
		a1, b1 := last.a1+trail, last.b1+trail
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(a0, a1-a0), hunkRange(b0, b1-b0))
		x := a0
		for _, c := range changes[:g] {
			writeLines(w, ' ', a[x:c.a0])
			writeLines(w, '-', a[c.a0:c.a1])
			writeLines(w, '+', b[c.b0:c.b1])
			x = c.a1
		}
		writeLines(w, ' ', a[x:a1])
		changes = changes[g:]
	}
}

func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func writeLines(w *strings.Builder, mark byte, lines []string) {
	for _, l := range lines {
		w.WriteByte(mark)
		w.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			w.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// Conflict markers merge writes, as git's diff3 style does: the workspace's lines,
// the baseline's, then the host's.
const (
	markOurs   = "<<<<<<< workspace\n"
	markBase   = "||||||| baseline\n"
	markSep    = "=======\n"
	markTheirs = ">>>>>>> host\n"
)

// merge3 merges the changes from base to ours and from base to theirs. Where both
// changed the same lines differently, the result holds conflict markers and
// conflicts counts those places; lines gives the line (1-based) of each.
func merge3(base, ours, theirs []string) (out []byte, conflicts []int) {
	toOurs, toTheirs := matchOf(base, ours), matchOf(base, theirs)
	var b bytes.Buffer
	line := 1
	emit := func(ls []string) {
		for _, l := range ls {
			b.WriteString(l)
			line++
		}
	}
	endLine := func(ls []string) { // a side whose last line lacks "\n" before a marker
		if len(ls) > 0 && !strings.HasSuffix(ls[len(ls)-1], "\n") {
			b.WriteByte('\n')
		}
	}
	o, a, t := 0, 0, 0
	for o < len(base) || a < len(ours) || t < len(theirs) {
		n := 0
		for o+n < len(base) && toOurs[o+n] == a+n && toTheirs[o+n] == t+n {
			n++
		}
		if n > 0 {
			emit(base[o : o+n])
			o, a, t = o+n, a+n, t+n
			continue
		}
		o2, a2, t2 := len(base), len(ours), len(theirs)
		for k := o; k < len(base); k++ {
			if toOurs[k] >= 0 && toTheirs[k] >= 0 {
				o2, a2, t2 = k, toOurs[k], toTheirs[k]
				break
			}
		}
		bs, os, ts := base[o:o2], ours[a:a2], theirs[t:t2]
		switch {
		case equalLines(os, bs):
			emit(ts)
		case equalLines(ts, bs), equalLines(os, ts):
			emit(os)
		default:
			conflicts = append(conflicts, line)
			b.WriteString(markOurs)
			emit(os)
			endLine(os)
			b.WriteString(markBase)
			emit(bs)
			endLine(bs)
			b.WriteString(markSep)
			emit(ts)
			endLine(ts)
			b.WriteString(markTheirs)
			line += 4
		}
		o, a, t = o2, a2, t2
	}
	return b.Bytes(), conflicts
}

// matchOf maps each line of base to the line of other it is matched with, or -1.
func matchOf(base, other []string) []int {
	m := make([]int, len(base))
	for i := range m {
		m[i] = -1
	}
	for _, bl := range matchLines(base, other) {
		for i := range bl.n {
			m[bl.a+i] = bl.b + i
		}
	}
	return m
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// markerLine returns the 1-based line of the first conflict marker merge writes
// in text, or 0.
func markerLine(text []byte) int {
	for i, l := range splitLines(text) {
		if l == markOurs || l == markTheirs || l == markBase {
			return i + 1
		}
	}
	return 0
}

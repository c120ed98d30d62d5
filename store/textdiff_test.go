package store

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The matching is a valid alignment (the equal lines are equal, in order) and, on
// small random texts, as short as an exhaustive LCS says.
func TestMatchLines(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		a, b := randLines(r), randLines(r)
		blocks := matchLines(a, b)
		same, pa, pb := 0, 0, 0
		for _, bl := range blocks {
			if bl.a < pa || bl.b < pb {
				t.Fatalf("blocks out of order: %v", blocks)
			}
			for i := range bl.n {
				if a[bl.a+i] != b[bl.b+i] {
					t.Fatalf("unequal lines matched: %q %q", a, b)
				}
			}
			same += bl.n
			pa, pb = bl.a+bl.n, bl.b+bl.n
		}
		if want := lcs(a, b); same != want {
			t.Fatalf("%q vs %q: %d lines matched, LCS is %d", a, b, same, want)
		}
	}
}

// A large file with scattered edits is matched line by line (cut at unique lines),
// not read as replaced whole: every unchanged line is matched.
func TestMatchLinesLarge(t *testing.T) {
	var a, b []string
	for i := range 20000 {
		a = append(a, fmt.Sprintf("line %d\n", i))
		if i%25 == 0 {
			b = append(b, "changed\n", "inserted\n")
		} else {
			b = append(b, fmt.Sprintf("line %d\n", i))
		}
	}
	same := 0
	pa, pb := 0, 0
	for _, bl := range matchLines(a, b) {
		if bl.a < pa || bl.b < pb {
			t.Fatal("blocks out of order")
		}
		for i := range bl.n {
			if a[bl.a+i] != b[bl.b+i] {
				t.Fatal("unequal lines matched")
			}
		}
		same += bl.n
		pa, pb = bl.a+bl.n, bl.b+bl.n
	}
	if want := 20000 - 20000/25; same != want {
		t.Errorf("%d lines matched, want %d", same, want)
	}
}

func randLines(r *rand.Rand) []string {
	n := r.IntN(12)
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a'+r.IntN(4))) + "\n"
	}
	return out
}

func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

// The hunks are what diff -u prints (checked against the diff binary where there
// is one; the expected text below stands without it).
func TestUnifiedHunks(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13"
	var w strings.Builder
	unifiedHunks(&w, splitLines([]byte(a)), splitLines([]byte(b)), 3)
	want := "@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n\\ No newline at end of file\n"
	if w.String() != want {
		t.Errorf("hunks:\n%s\nwant:\n%s", w.String(), want)
	}
	if _, err := exec.LookPath("diff"); err != nil {
		return
	}
	dir := t.TempDir()
	writeFile(t, dir, "a", a)
	writeFile(t, dir, "b", b)
	out, _ := exec.Command("diff", "-u", filepath.Join(dir, "a"), filepath.Join(dir, "b")).Output()
	_, body, _ := strings.Cut(string(out), "@@")
	if "@@"+body != want {
		t.Errorf("diff -u says:\n@@%s", body)
	}
}

// Edits of different lines merge; edits of the same lines differently give
// markers; the same edit on both sides is taken once.
func TestMerge3(t *testing.T) {
	lines := func(s string) []string { return splitLines([]byte(s)) }
	base := "a\nb\nc\nd\ne\nf\n"
	out, c := merge3(lines(base), lines("a\nB\nc\nd\ne\nf\n"), lines("a\nb\nc\nd\nE\nf\ng\n"))
	if string(out) != "a\nB\nc\nd\nE\nf\ng\n" || len(c) != 0 {
		t.Errorf("clean merge: %q %v", out, c)
	}
	out, c = merge3(lines(base), lines("a\nB\nc\nd\ne\nf\n"), lines("a\nB\nc\nd\ne\nf\n"))
	if string(out) != "a\nB\nc\nd\ne\nf\n" || len(c) != 0 {
		t.Errorf("the same edit: %q %v", out, c)
	}
	out, c = merge3(lines(base), lines("a\nX\nc\nd\ne\nf\n"), lines("a\nY\nc\nd\ne\nf\n"))
	want := "a\n" + markOurs + "X\n" + markBase + "b\n" + markSep + "Y\n" + markTheirs + "c\nd\ne\nf\n"
	if string(out) != want || len(c) != 1 || c[0] != 2 || markerLine(out) != 2 {
		t.Errorf("conflict: %q %v", out, c)
	}
	if markerLine([]byte(base)) != 0 {
		t.Error("markers found in plain text")
	}
}

package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// referencePlan is the comparison as it was before the manifest and the targeted host
// lookups: all three trees scanned whole and diffed path by path.
func referencePlan(t *testing.T, o *opened) *plan {
	t.Helper()
	ctx := context.Background()
	pl := &plan{o: o, ex: o.ex, host: map[string]hostEntry{}}
	var host tree
	var err error
	for _, s := range []struct {
		dst *tree
		r   *root
	}{{&pl.base, o.base}, {&pl.work, o.work}, {&host, o.src}} {
		if *s.dst, err = scan(ctx, s.r, o.ex); err != nil {
			t.Fatal(err)
		}
	}
	host.each(func(p string, e entry) { pl.host[p] = hostEntry{e, true} })
	if pl.ws, err = diff(pl.base, pl.work, o.base, o.work); err != nil {
		t.Fatal(err)
	}
	if pl.hs, err = diff(pl.base, host, o.base, o.src); err != nil {
		t.Fatal(err)
	}
	for p := range pl.ws {
		if _, ok := pl.hs[p]; !ok {
			continue
		}
		w, wok := pl.work.get(p)
		h, hok := pl.hostAt(p)
		if act, err := compare(w, h, wok, hok, o.work, o.src, p); err != nil {
			t.Fatal(err)
		} else if act == "" {
			delete(pl.ws, p)
			delete(pl.hs, p)
		}
	}
	pl.collapse()
	pl.findConflicts()
	return pl
}

// randomEdits changes the tree at dir in n random ways: content (same size or not),
// modes, mtimes, removals, additions, and type changes, with links that may point
// anywhere, including outside and through other links.
func randomEdits(rng *rand.Rand, dir string, n int) {
	for range n {
		var paths []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && p != dir {
				rel, _ := filepath.Rel(dir, p)
				paths = append(paths, rel)
			}
			return nil
		})
		if len(paths) == 0 {
			return
		}
		p := filepath.Join(dir, paths[rng.IntN(len(paths))])
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		target := func() string {
			return []string{"a", "../a", "../../x", "/etc/passwd", "d1", "d1/f1", "l1", "..", "."}[rng.IntN(9)]
		}
		switch rng.IntN(9) {
		case 0: // same size, new bytes
			if fi.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				for i := range b {
					b[i] ^= 1
				}
				os.WriteFile(p, b, fi.Mode().Perm())
			}
		case 1:
			if fi.Mode().IsRegular() {
				os.WriteFile(p, []byte(fmt.Sprint("new ", rng.IntN(1000))), fi.Mode().Perm())
			}
		case 2:
			switch {
			case fi.IsDir():
				// Searchable by its owner: the tests also run as an ordinary
				// user, who could not look inside otherwise.
				os.Chmod(p, []os.FileMode{0o750, 0o711, 0o755, 0o700}[rng.IntN(4)])
			case fi.Mode()&os.ModeSymlink == 0:
				os.Chmod(p, []os.FileMode{0o600, 0o644, 0o755, 0o700}[rng.IntN(4)])
			}
		case 3:
			os.RemoveAll(p)
		case 4:
			if fi.IsDir() {
				os.WriteFile(filepath.Join(p, fmt.Sprint("n", rng.IntN(5))), []byte("added"), 0o644)
			}
		case 5:
			if fi.IsDir() {
				os.MkdirAll(filepath.Join(p, fmt.Sprint("nd", rng.IntN(3)), "deep"), 0o755)
			}
		case 6: // file or link → directory with a file
			if !fi.IsDir() {
				os.Remove(p)
				os.Mkdir(p, 0o755)
				os.WriteFile(filepath.Join(p, "inner"), []byte("i"), 0o644)
			}
		case 7: // anything → symlink
			os.RemoveAll(p)
			os.Symlink(target(), p)
		case 8: // anything → file
			os.RemoveAll(p)
			os.WriteFile(p, []byte("became a file"), 0o644)
		}
	}
}

func randomTree(rng *rand.Rand, dir string) {
	for i := range 3 {
		d := filepath.Join(dir, fmt.Sprint("d", i))
		os.MkdirAll(filepath.Join(d, "sub"), 0o755)
		for j := range 1 + rng.IntN(4) {
			os.WriteFile(filepath.Join(d, fmt.Sprint("f", j)), []byte(strings.Repeat("x", 1+rng.IntN(20))), 0o644)
			os.WriteFile(filepath.Join(d, "sub", fmt.Sprint("g", j)), []byte("g"), 0o644)
		}
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("top"), 0o644)
	os.Symlink("d1/f1", filepath.Join(dir, "l1"))
	os.Symlink("d0", filepath.Join(dir, "l2"))
}

// Status must report exactly what the full three-tree comparison reported, whether
// the host is looked up path by path or scanned whole, for random edits on both sides.
func TestPlanMatchesFullComparison(t *testing.T) {
	rounds := 120
	if testing.Short() {
		rounds = 15
	}
	saved := hostScanMin
	defer func() { hostScanMin = saved }()
	for i := range rounds {
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		e := newEnv(t)
		randomTree(rng, e.src)
		excl := []string{}
		if i%3 == 0 {
			excl = append(excl, "d2/sub")
		}
		id := e.create(excl...).WorkspaceID
		randomEdits(rng, e.work(id), 1+rng.IntN(6))
		randomEdits(rng, e.src, rng.IntN(5))
		o, err := e.s.open(id)
		if err != nil {
			t.Fatal(err)
		}
		want := referencePlan(t, o)
		for _, min := range []int{1 << 30, -1} { // path by path; whole scan
			hostScanMin = min
			got, err := makePlan(context.Background(), o, true)
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			if !reflect.DeepEqual(got.changes, want.changes) || !reflect.DeepEqual(got.conflicts, want.conflicts) {
				t.Fatalf("round %d (hostScanMin %d):\n got changes %s\n     conflicts %+v\nwant changes %s\n     conflicts %+v",
					i, min, changesOf(got.changes), got.conflicts, changesOf(want.changes), want.conflicts)
			}
		}
		o.Close()
		hostScanMin = saved
		if len(want.conflicts) == 0 { // and sync applies it: the host ends up as the workspace
			e.mustSync(id)
			checkManifest(t, e, id)
			if st := e.status(id); len(st.Changes) != 0 {
				t.Fatalf("round %d: changes after sync: %s", i, changesOf(st.Changes))
			}
		}
	}
}

package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/autobox-dev/autobox/internal/xfstest"
	"golang.org/x/sys/unix"
)

// The fault harness: a sync that replaces directories with files and links, a file
// with a directory, deletes a directory and edits a file, killed (SIGKILL) or failed
// (ENOSPC) before each of its steps in turn. After every trial each changed host path
// must be wholly old or wholly new, applied and the recovery text must say exactly
// which, status must list exactly the paths still old, and a second sync must finish.
//
// `make test` runs a few steps of each; `make soak` (AUTOBOX_SOAK=1) runs every step,
// with wider trees so staging takes several windows, and a real disk-full sweep.

func soak() bool { return os.Getenv("AUTOBOX_SOAK") != "" }

// countSteps sets testHookStep to call fn with each step's number (from 1) and name.
func countSteps(fn func(n int, what string) error) {
	var mu sync.Mutex
	n := 0
	testHookStep = func(what string) error {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fn(n, what)
	}
}

// replacements sets up the scenario in e and returns the workspace id. wide files
// are added to each replaced directory (more than stageFiles spans windows).
func replacements(t *testing.T, e *env, wide int) string {
	t.Helper()
	for _, f := range []string{"d/a.txt", "d/sub/b.txt", "f", "l/c.txt", "gone/g.txt", "gone/h/i.txt", "e.txt", "keep.txt"} {
		writeFile(t, e.src, f, "old "+f)
	}
	for i := range wide {
		writeFile(t, e.src, fmt.Sprintf("d/w%02d.txt", i), "old wide")
	}
	id := e.create().WorkspaceID
	w := e.work(id)
	for _, d := range []string{"d", "f", "l", "gone"} {
		if err := os.RemoveAll(filepath.Join(w, d)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, w, "d", "d is a file now")
	writeFile(t, w, "f/x.txt", "new x")
	writeFile(t, w, "f/sub/y.txt", "new y")
	for i := range wide {
		writeFile(t, w, fmt.Sprintf("f/w%02d.txt", i), "new wide")
	}
	if err := os.Symlink("f", filepath.Join(w, "l")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, w, "e.txt", "new e")
	return id
}

// describe gives the whole tree at dir/rel (type, permission, content or target of
// each entry), "absent" when nothing is there.
func describe(t *testing.T, dir, rel string) string {
	t.Helper()
	root := filepath.Join(dir, rel)
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return "absent"
	}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		desc := fmt.Sprintf("%s %v", r, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if len(b) > 64 {
				b = fmt.Appendf(nil, "%d bytes, sha256 %x", len(b), sha256.Sum256(b))
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		out = append(out, desc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "; ")
}

// trial is one run of the scenario: the listed changes and each path's old and new
// state, for checking what a fault left.
type trial struct {
	t        *testing.T
	e        *env
	id       string
	changes  []string
	old, new map[string]string
	res      *SyncResult // of the faulty sync, where it returned
}

func newTrial(t *testing.T, e *env, wide int) *trial {
	tr := &trial{t: t, e: e, id: replacements(t, e, wide), old: map[string]string{}, new: map[string]string{}}
	for _, c := range e.status(tr.id).Changes {
		tr.changes = append(tr.changes, c.Path)
		tr.old[c.Path] = describe(t, e.src, c.Path)
		tr.new[c.Path] = describe(t, e.work(tr.id), c.Path)
	}
	want := []string{"d", "e.txt", "f", "f/sub", "f/sub/y.txt", "f/x.txt", "gone", "l"}
	for i := range wide {
		want = append(want, fmt.Sprintf("f/w%02d.txt", i))
	}
	sort.Strings(want)
	if !slices.Equal(tr.changes, want) {
		t.Fatalf("scenario changes %v, want %v", tr.changes, want)
	}
	return tr
}

// states returns, for each listed change, whether the host holds its new state; a
// path wholly neither fails the test.
func (tr *trial) states(when string) map[string]bool {
	isNew := map[string]bool{}
	for _, c := range tr.changes {
		switch got := describe(tr.t, tr.e.src, c); got {
		case tr.new[c]:
			isNew[c] = true
		case tr.old[c]:
		default:
			tr.t.Fatalf("%s: host %s is neither old nor new:\n got %s\n old %s\n new %s", when, c, got, tr.old[c], tr.new[c])
		}
	}
	return isNew
}

// finish checks that status lists exactly the paths still old, then that a sync
// brings every path to its new state and leaves nothing behind.
func (tr *trial) finish(when string, isNew map[string]bool) {
	t, e := tr.t, tr.e
	var listed, old []string
	for _, c := range e.status(tr.id).Changes {
		listed = append(listed, c.Path)
	}
	for _, c := range tr.changes {
		if !isNew[c] {
			old = append(old, c)
		}
	}
	if !slices.Equal(listed, old) {
		t.Fatalf("%s: status lists %v; the paths still old are %v", when, listed, old)
	}
	if res := e.sync(tr.id); !res.OK {
		js, _ := json.Marshal(res)
		t.Fatalf("%s: the next sync: %s", when, js)
	}
	for c, isNew := range tr.states(when + ", then synced") {
		if !isNew {
			t.Fatalf("%s: %s not synced by the next sync", when, c)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(e.src, ".autobox-sync-*")); len(left) != 0 {
		t.Fatalf("%s: host staging left after the next sync: %v", when, left)
	}
	if st := e.status(tr.id); len(st.Changes)+len(st.Conflicts) != 0 {
		t.Fatalf("%s: status after the next sync: %+v", when, st)
	}
}

// checkResult checks that applied names exactly the paths the host holds new, and
// that the recovery text is the one that says so.
func (tr *trial) checkResult(when string, res *SyncResult, isNew map[string]bool) {
	if res.OK {
		for _, c := range tr.changes {
			if !isNew[c] {
				tr.t.Fatalf("%s: sync ok, but %s is old", when, c)
			}
		}
		return
	}
	var want []string
	for _, c := range tr.changes {
		if isNew[c] {
			want = append(want, c)
		}
	}
	got := slices.Sorted(slices.Values(res.Applied))
	if !slices.Equal(got, want) {
		tr.t.Fatalf("%s: applied %v, but the host holds new %v", when, got, want)
	}
	if res.Recovery != recovery || res.Error == "" {
		tr.t.Fatalf("%s: error %q, recovery %q", when, res.Error, res.Recovery)
	}
}

// stepsOf counts the steps of the scenario's sync, in a trial of its own.
func stepsOf(t *testing.T, wide int) []string {
	e := newEnv(t)
	tr := newTrial(t, e, wide)
	var steps []string
	countSteps(func(_ int, what string) error { steps = append(steps, what); return nil })
	defer func() { testHookStep = nil }()
	tr.checkResult("without faults", e.mustSync(tr.id), tr.states("without faults"))
	return steps
}

// which picks the steps a run tries: all of them under soak; otherwise the first of
// each kind (stage, mkdir, exchange, rename, ...) and a few spread over the rest.
func which(steps []string) []int {
	n := len(steps)
	if soak() {
		all := make([]int, n)
		for i := range all {
			all[i] = i + 1
		}
		return all
	}
	picked := []int{1, n / 3, n / 2, 2 * n / 3, n - 1, n}
	seen := map[string]bool{}
	for i, st := range steps {
		kind := st[:strings.LastIndexByte(st, ' ')+1]
		if !seen[kind] {
			seen[kind] = true
			picked = append(picked, i+1)
		}
	}
	slices.Sort(picked)
	return slices.Compact(picked)
}

func wideCases() []int {
	if soak() {
		return []int{0, 3, 2 * stageFiles}
	}
	return []int{0}
}

// eachStep runs fault(k) on a fresh trial for each chosen step k of the scenario.
func eachStep(t *testing.T, fault string, run func(tr *trial, k int) string) {
	for _, wide := range wideCases() {
		steps := stepsOf(t, wide)
		t.Logf("wide %d: %d steps, %s before %d of them in turn", wide, len(steps), fault, len(which(steps)))
		for _, k := range which(steps) {
			when := fmt.Sprintf("wide %d, %s at step %d of %d (%s)", wide, fault, k, len(steps), steps[k-1])
			tr := newTrial(t, newEnv(t), wide)
			if msg := run(tr, k); msg != "" {
				t.Fatalf("%s: %s", when, msg)
			}
			if fault == killedAside {
				// Between its two renames the path is empty; the next operation
				// (here status) must put the old entry back.
				tr.e.status(tr.id)
			}
			isNew := tr.states(when)
			if fault == "out of space" {
				tr.checkResult(when, tr.res, isNew)
			}
			tr.finish(when, isNew)
		}
	}
}

func TestSyncKilledAtEachStep(t *testing.T) {
	eachStep(t, "killed", func(tr *trial, k int) string {
		cmd, out, _ := child(t, "sync-kill", tr.e.state, "WORKSPACE_ID="+tr.id, fmt.Sprint("KILL_AT=", k))
		rest, _ := io.ReadAll(out)
		cmd.Wait()
		if len(rest) > 0 {
			return fmt.Sprintf("the sync finished: %s", rest)
		}
		return ""
	})
}

// The same on a filesystem that cannot exchange: the old entry is set aside with a
// note of its path, and the next operation puts it back if the new one is not there.
func TestSyncKilledAtEachStepWithoutExchange(t *testing.T) {
	exchange = noExchange
	defer func() { exchange = renameExchange }()
	eachStep(t, killedAside, func(tr *trial, k int) string {
		cmd, out, _ := child(t, "sync-kill", tr.e.state, "WORKSPACE_ID="+tr.id, fmt.Sprint("KILL_AT=", k), "NO_EXCHANGE=1")
		rest, _ := io.ReadAll(out)
		cmd.Wait()
		if len(rest) > 0 {
			return fmt.Sprintf("the sync finished: %s", rest)
		}
		return ""
	})
}

const killedAside = "killed without exchange"

func noExchange(int, string, int, string) error { return unix.EINVAL }

func TestSyncFailedAtEachStep(t *testing.T) {
	defer func() { testHookStep = nil }()
	eachStep(t, "out of space", func(tr *trial, k int) string {
		countSteps(func(n int, _ string) error {
			if n == k {
				return unix.ENOSPC
			}
			return nil
		})
		tr.res = tr.e.sync(tr.id)
		testHookStep = nil
		return ""
	})
}

// The same with a real full disk: the source on a 4 MB tmpfs filled to leave less and
// less room than the sync needs.
func TestSyncOutOfSpace(t *testing.T) {
	mnt, unmount, err := xfstest.MountTmpfsSized(filepath.Join(t.TempDir(), "small"), 4<<20)
	if err != nil {
		t.Skip("needs a small tmpfs (root): ", err)
	}
	defer unmount()
	big := strings.Repeat("n", 256<<10)
	frees := []int64{0, 64 << 10, 300 << 10, 600 << 10}
	if soak() {
		frees = nil
		for f := int64(0); f < 1200<<10; f += 48 << 10 {
			frees = append(frees, f)
		}
	}
	t.Logf("%d trials, from %d KiB to %d KiB free", len(frees), frees[0]>>10, frees[len(frees)-1]>>10)
	for _, free := range frees {
		when := fmt.Sprintf("%d KiB free", free>>10)
		e := newEnvOn(t, t.TempDir(), CopyModeAuto)
		e.src = filepath.Join(mnt, "src")
		os.RemoveAll(e.src)
		os.Mkdir(e.src, 0o755)
		tr := newTrial(t, e, 0)
		w := e.work(tr.id)
		// Large new files, so space runs out while staging them.
		for _, f := range []string{"d", "f/x.txt", "f/sub/y.txt", "e.txt"} {
			writeFile(t, w, f, big+f)
			tr.new[f] = describe(t, w, f)
		}
		tr.new["f"], tr.new["f/sub"] = describe(t, w, "f"), describe(t, w, "f/sub")
		filler := filepath.Join(mnt, "filler")
		fill(t, filler, mnt, free)
		res := e.sync(tr.id)
		isNew := tr.states(when)
		tr.checkResult(when, res, isNew)
		if !res.OK && (!strings.Contains(res.Error, "no space left") || !strings.Contains(res.Error, "the filesystem mounted at "+mnt+", which holds the host source, is full") ||
			!strings.Contains(res.Error, e.src+"/") || strings.Contains(res.Error, "copying into")) {
			t.Fatalf("%s: want an out-of-space error naming the path in %s and the filesystem at %s: %s", when, e.src, mnt, res.Error)
		}
		if !res.OK && free == 0 {
			t.Logf("out of space: %s", res.Error)
		}
		os.Remove(filler)
		tr.finish(when, isNew)
		os.RemoveAll(e.src)
	}
}

// fill writes path until the filesystem at mnt has about free bytes left.
func fill(t *testing.T, path, mnt string, free int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	size := int64(st.Bavail)*int64(st.Bsize) - free
	if size < 0 {
		size = 0
	}
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil && !errors.Is(err, unix.ENOSPC) {
		t.Fatal(err)
	}
}

// A create that runs out of space says which source file it was copying and which
// filesystem is full, not the name of the copy it was writing.
func TestCreateOutOfSpace(t *testing.T) {
	mnt, unmount, err := xfstest.MountTmpfsSized(filepath.Join(t.TempDir(), "small"), 1<<20)
	if err != nil {
		t.Skip("needs a small tmpfs (root): ", err)
	}
	defer unmount()
	e := newEnvOn(t, t.TempDir(), CopyModeAuto)
	e.storage = filepath.Join(mnt, "storage")
	writeFile(t, e.src, "big.bin", strings.Repeat("b", 2<<20))
	_, err = e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: CopyModeAuto})
	want := "create: copying " + filepath.Join(e.src, "big.bin") + " into the workspace storage: no space left on device: the filesystem mounted at " + mnt + ", which holds the workspace storage, is full"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.HasSuffix(err.Error(), "; nothing was created (the partial copy was removed)") {
		t.Fatalf("create on a full disk: %v\nwant it to contain %q", err, want)
	}
	// Positive control: with room, the same create succeeds.
	e.storage = filepath.Join(t.TempDir(), "storage")
	e.create()
}

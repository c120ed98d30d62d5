package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// status's diff: text hunks, binary and oversized files summarised, links shown by
// target and never followed, hostile names quoted, and a total bound with a note.
func TestStatusDiff(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "one\ntwo\nthree\n")
	writeFile(t, e.src, "bin", "\x00\x01")
	writeFile(t, e.src, "bin2", "was a file\n")
	writeFile(t, e.src, "gone.txt", "bye\n")
	id := e.create().WorkspaceID
	w := e.work(id)
	writeFile(t, w, "a.txt", "one\n2\nthree\n")
	writeFile(t, w, "bin", "\x00\x02")
	writeFile(t, w, "big", strings.Repeat("x", DiffFileMax+1))
	writeFile(t, w, "evil\x1b[2Kname", "hidden\n")
	os.Remove(filepath.Join(w, "gone.txt"))
	if err := os.Symlink("/etc/passwd", filepath.Join(w, "link")); err != nil {
		t.Fatal(err)
	}
	// A file made a directory, and a FIFO (never opened: a reader would block).
	os.Remove(filepath.Join(w, "bin2"))
	writeFile(t, w, "bin2/inside", "in\n")
	if err := syscall.Mkfifo(filepath.Join(w, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := e.s.StatusWith(context.Background(), id, &StatusOptions{Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
		"Binary files a/bin and b/bin differ\n",
		"big: 1048577 bytes, too large to diff (the limit is 1 MB)\n",
		"diff --git \"a/evil\\x1b[2Kname\" \"b/evil\\x1b[2Kname\"\nnew file mode 100644\n",
		"deleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
		"new file mode 120777\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
		"diff --git a/bin2 b/bin2\ndeleted file mode 100644\n--- a/bin2\n+++ /dev/null\n@@ -1 +0,0 @@\n-was a file\n",
		"diff --git a/bin2/inside b/bin2/inside\nnew file mode 100644\n",
		"fifo: FIFO, not diffed\n",
	} {
		if !strings.Contains(st.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, st.Diff)
		}
	}
	if strings.Contains(st.Diff, "root:") || st.DiffTruncated {
		t.Errorf("the diff followed a link, or was cut: %v\n%s", st.DiffTruncated, st.Diff)
	}
	if plain := e.status(id); plain.Diff != "" {
		t.Error("a diff nobody asked for")
	}
	// The bound: many changed files, each under the file limit.
	for i := range 40 {
		writeFile(t, w, filepath.Join("many", string(rune('a'+i%26))+strings.Repeat("y", i)), strings.Repeat("line\n", 1000))
	}
	st, err = e.s.StatusWith(context.Background(), id, &StatusOptions{Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	if !st.DiffTruncated || len(st.Diff) > DiffTotalMax || !strings.Contains(st.Diff, "[autobox: diff cut at 64 KB: ") || !strings.Contains(st.Diff, "ask status with paths") {
		t.Errorf("a large diff: truncated %v, %d bytes, ends %q", st.DiffTruncated, len(st.Diff), st.Diff[max(0, len(st.Diff)-200):])
	}
	// One file whose diff alone is larger than half the bound is summarised.
	writeFile(t, w, "huge.txt", strings.Repeat("a long line of text\n", 3000))
	st, err = e.s.StatusWith(context.Background(), id, &StatusOptions{Diff: true, Paths: []string{"huge.txt", "a.txt"}})
	if err != nil || st.DiffTruncated || !strings.Contains(st.Diff, "huge.txt: a diff of ") || !strings.Contains(st.Diff, "+2\n") {
		t.Errorf("a file with a large diff: %v %s", err, st.Diff)
	}
	// Narrowed by paths, the same diff fits.
	st, err = e.s.StatusWith(context.Background(), id, &StatusOptions{Diff: true, Paths: []string{"a.txt"}})
	if err != nil || st.DiffTruncated || len(st.Changes) != 1 || !strings.Contains(st.Diff, "+2\n") || len(st.Pending) == 0 {
		t.Errorf("status with paths: %v %+v", err, st)
	}
}

// sync with paths applies only those (and the new directories they need); the rest
// stays pending, listed by the next status; a conflict elsewhere does not stop it.
func TestSyncPaths(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a\n")
	writeFile(t, e.src, "b.txt", "b\n")
	writeFile(t, e.src, "c.txt", "c\n")
	id := e.create().WorkspaceID
	w := e.work(id)
	writeFile(t, w, "a.txt", "A\n")
	writeFile(t, w, "b.txt", "B\n")
	writeFile(t, w, "new/deep/n.txt", "n\n")
	writeFile(t, w, "c.txt", "workspace\n")
	writeFile(t, e.src, "c.txt", "host\n") // a conflict, not named

	ctx := context.Background()
	for _, bad := range []struct {
		paths []string
		want  string
	}{
		{[]string{"../etc/passwd"}, `paths[0] "../etc/passwd" contains ".."`},
		{[]string{"a.txt", "/etc/passwd"}, `paths[1] "/etc/passwd" is absolute and not beneath the workspace's sandboxPath /mnt/project`},
		{[]string{"nothing-here"}, `paths[0] "nothing-here": the workspace has no change at or beneath it`},
		{[]string{"."}, `names the workspace root`},
		{[]string{}, "paths is empty"},
	} {
		if _, err := e.s.SyncWith(ctx, id, &SyncOptions{Paths: bad.paths}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("sync paths %q: %v; want %q", bad.paths, err, bad.want)
		}
	}
	if readFile(t, e.src, "a.txt") != "a\n" {
		t.Fatal("a refused sync changed the host")
	}
	res, err := e.s.SyncWith(ctx, id, &SyncOptions{Paths: []string{"a.txt", "/mnt/project/new/deep/n.txt"}})
	if err != nil || !res.OK {
		t.Fatalf("sync with paths: %v %+v", err, res)
	}
	if got := strings.Join(res.Applied, ","); got != "a.txt,new,new/deep,new/deep/n.txt" {
		t.Errorf("applied %s", got)
	}
	if readFile(t, e.src, "a.txt") != "A\n" || readFile(t, e.src, "new/deep/n.txt") != "n\n" || readFile(t, e.src, "b.txt") != "b\n" {
		t.Error("host after a sync with paths")
	}
	if len(res.Pending) != 2 || res.Pending[0].Path != "b.txt" || res.Pending[1].Path != "c.txt" {
		t.Errorf("pending: %+v", res.Pending)
	}
	st := e.status(id)
	if len(st.Changes) != 2 || st.Changes[0].Path != "b.txt" || len(st.Conflicts) != 1 || st.Conflicts[0].Path != "c.txt" {
		t.Errorf("status after: %+v", st)
	}
	// Naming the conflicted path stops the sync, nothing applied.
	res, err = e.s.SyncWith(ctx, id, &SyncOptions{Paths: []string{"b.txt", "c.txt"}})
	if err != nil || res.OK || len(res.Conflicts) != 1 || readFile(t, e.src, "b.txt") != "b\n" {
		t.Errorf("sync of a conflicted path: %v %+v", err, res)
	}
}

// A conflict resolved: after a hand merge, resolve takes the host's version as the
// baseline and sync applies the workspace's; merge merges text edits that do not
// overlap, and marks those that do.
func TestResolveAndMerge(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "hand.txt", "1\n2\n3\n")
	writeFile(t, e.src, "auto.txt", "a\nb\nc\nd\ne\nf\ng\n")
	writeFile(t, e.src, "clash.txt", "x\n")
	writeFile(t, e.src, "bin", "\x00")
	id := e.create().WorkspaceID
	w := e.work(id)
	ctx := context.Background()
	writeFile(t, w, "hand.txt", "1\n2\n3\nworkspace\n")
	writeFile(t, e.src, "hand.txt", "host\n1\n2\n3\n")
	writeFile(t, w, "auto.txt", "A\nb\nc\nd\ne\nf\ng\n")
	writeFile(t, e.src, "auto.txt", "a\nb\nc\nd\ne\nf\nG\n")
	later(t, e.src, "auto.txt") // same size: the host's change shows in its mtime
	writeFile(t, w, "clash.txt", "workspace\n")
	writeFile(t, e.src, "clash.txt", "host\n")
	writeFile(t, w, "bin", "\x01")
	writeFile(t, e.src, "bin", "\x02")
	later(t, e.src, "bin")

	st := e.status(id)
	if len(st.Conflicts) != 4 || !strings.Contains(st.Conflicts[0].Reason, `action "merge" with paths ["auto.txt"]`) || !strings.Contains(st.Conflicts[0].Reason, `action "resolve"`) {
		t.Fatalf("conflicts: %+v", st.Conflicts)
	}
	// Refusals: not a conflict, binary for merge, nothing named.
	if _, err := e.s.Resolve(ctx, id, []string{"nothing"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `paths[0] "nothing": it is not in conflict`) {
		t.Errorf("resolve of a path not in conflict: %v", err)
	}
	if _, err := e.s.Merge(ctx, id, []string{"auto.txt", "bin"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `paths[1] "bin": merge needs a text file`) {
		t.Errorf("merge of a binary file: %v", err)
	}
	if _, err := e.s.Resolve(ctx, id, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "resolve needs paths") {
		t.Errorf("resolve without paths: %v", err)
	}
	if readFile(t, w, "auto.txt") != "A\nb\nc\nd\ne\nf\ng\n" {
		t.Fatal("a refused merge changed the workspace")
	}

	// By hand: the workspace takes in the host's line, then resolve.
	writeFile(t, w, "hand.txt", "host\n1\n2\n3\nworkspace\n")
	if r, err := e.s.Resolve(ctx, id, []string{"hand.txt", "bin"}); err != nil || !r.OK || len(r.Resolved) != 2 || !strings.Contains(r.Next, "sync") {
		t.Fatalf("resolve: %v %+v", err, r)
	}
	// Merge: auto.txt merges cleanly, clash.txt gets markers.
	r, err := e.s.Merge(ctx, id, []string{"auto.txt", "clash.txt"})
	if err != nil || r.OK || strings.Join(r.Merged, ",") != "auto.txt" || len(r.Conflicted) != 1 || r.Conflicted[0].Path != "clash.txt" ||
		!strings.Contains(r.Next, `action "resolve" with paths ["clash.txt"]`) {
		t.Fatalf("merge: %v %+v", err, r)
	}
	if got := readFile(t, w, "auto.txt"); got != "A\nb\nc\nd\ne\nf\nG\n" {
		t.Errorf("merged auto.txt: %q", got)
	}
	if got := readFile(t, w, "clash.txt"); got != markOurs+"workspace\n"+markBase+"x\n"+markSep+"host\n"+markTheirs {
		t.Errorf("clash.txt with markers: %q", got)
	}
	// Markers left in: resolve refuses; edited: resolve works.
	if _, err := e.s.Resolve(ctx, id, []string{"clash.txt"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "conflict marker at line 1") {
		t.Errorf("resolve with markers left: %v", err)
	}
	writeFile(t, w, "clash.txt", "both\n")
	if _, err := e.s.Resolve(ctx, id, []string{"clash.txt"}); err != nil {
		t.Fatal(err)
	}
	if st := e.status(id); len(st.Conflicts) != 0 || len(st.Changes) != 4 {
		t.Fatalf("status after resolving: %+v", st)
	}
	e.mustSync(id)
	for p, want := range map[string]string{"hand.txt": "host\n1\n2\n3\nworkspace\n", "auto.txt": "A\nb\nc\nd\ne\nf\nG\n", "clash.txt": "both\n", "bin": "\x01"} {
		if got := readFile(t, e.src, p); got != want {
			t.Errorf("host %s: %q, want %q", p, got, want)
		}
	}
	if st := e.status(id); len(st.Changes) != 0 || len(st.Conflicts) != 0 {
		t.Errorf("status after sync: %+v", st)
	}
}

// A host that deleted what the workspace changed: resolve makes the deletion the
// baseline, and sync adds the workspace's file back.
func TestResolveHostDeleted(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "d/f.txt", "f\n")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "d/f.txt", "kept\n")
	os.RemoveAll(filepath.Join(e.src, "d"))
	if _, err := e.s.Resolve(context.Background(), id, []string{"d/f.txt"}); err == nil {
		t.Fatal("resolve of a path under a directory the host removed: want refused (the conflict is about the directory)")
	}
	os.Mkdir(filepath.Join(e.src, "d"), 0o755)
	if r, err := e.s.Resolve(context.Background(), id, []string{"d/f.txt"}); err != nil || !r.OK {
		t.Fatalf("resolve: %v %+v", err, r)
	}
	e.mustSync(id)
	if readFile(t, e.src, "d/f.txt") != "kept\n" {
		t.Error("the workspace's file did not come back")
	}
}

// later sets dir/rel's mtime an hour ahead, so a change of the same size is seen
// even when it comes within the clock tick of the copy.
func later(t *testing.T, dir, rel string) {
	t.Helper()
	ts := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, rel), ts, ts); err != nil {
		t.Fatal(err)
	}
}

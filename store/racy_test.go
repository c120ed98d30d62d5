package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A host file written again in the tick its copy was taken (its mtime then
// unchanged) and kept at its size is racy: status compares it by content and
// finds the conflict, where size and mtime alone would have said "unchanged"
// and sync would have replaced the host's edit. The mtime in the future of the
// copy stands for "the same tick" without depending on the clock.
func TestRacyHostEditIsAConflict(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "base")
	writeFile(t, e.src, "same.txt", "same")
	writeFile(t, e.src, "old.txt", "old1")
	at := func(name string, when time.Time) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(e.src, name), when, when); err != nil {
			t.Fatal(err)
		}
	}
	tick, old := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	at("a.txt", tick)
	at("same.txt", tick)
	at("old.txt", old)
	res := e.create()
	id, w := res.WorkspaceID, e.work(res.WorkspaceID)
	writeFile(t, w, "a.txt", "ws!!")
	writeFile(t, w, "old.txt", "ws22")
	writeFile(t, e.src, "a.txt", "host")
	at("a.txt", tick)
	for range 2 { // the second status reads the baseline's manifest
		st := e.status(id)
		if got := changesOf(st.Changes); got != "modify a.txt, modify old.txt" {
			t.Errorf("changes: %s (a racy file the workspace did not change, same.txt, is no change)", got)
		}
		if len(st.Conflicts) != 1 || st.Conflicts[0].Path != "a.txt" {
			t.Fatalf("conflicts %+v, want a.txt's", st.Conflicts)
		}
	}
	if sr := e.sync(id); sr.OK {
		t.Fatalf("sync with a racy host edit: %+v", sr)
	}
	if got := readFile(t, e.src, "a.txt"); got != "host" {
		t.Errorf("the host's edit of a.txt: %q", got)
	}
	// The control: without a host edit the same racy file syncs.
	writeFile(t, e.src, "a.txt", "base")
	at("a.txt", tick)
	if sr := e.mustSync(id); len(sr.Applied) != 2 || readFile(t, e.src, "a.txt") != "ws!!" {
		t.Errorf("sync after the host's edit was undone: %+v, a.txt %q", sr, readFile(t, e.src, "a.txt"))
	}
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestSyncRoundTrip(t *testing.T) {
	e := newEnv(t)
	for p, c := range map[string]string{
		"edit.txt": "one", "del.txt": "bye", "mode.sh": "#!/bin/sh\n", "dir/a.txt": "a", "dir/sub/b.txt": "b",
		"f2d": "file", "d2f/x.txt": "x", "f2l": "file", "keep.txt": "keep", "hostonly.txt": "h1",
	} {
		writeFile(t, e.src, p, c)
	}
	res := e.create()
	id, w := res.WorkspaceID, e.work(res.WorkspaceID)

	writeFile(t, w, "edit.txt", "two")
	os.Remove(filepath.Join(w, "del.txt"))
	os.Chmod(filepath.Join(w, "mode.sh"), 0o755)
	os.RemoveAll(filepath.Join(w, "dir"))
	os.Remove(filepath.Join(w, "f2d"))
	writeFile(t, w, "f2d/inner.txt", "inner")
	os.RemoveAll(filepath.Join(w, "d2f"))
	writeFile(t, w, "d2f", "now a file")
	os.Remove(filepath.Join(w, "f2l"))
	os.Symlink("edit.txt", filepath.Join(w, "f2l"))
	writeFile(t, w, "new/deep/n.txt", "new")
	os.Mkdir(filepath.Join(w, "emptydir"), 0o700)
	// Unrelated host edits must survive the sync.
	writeFile(t, e.src, "hostonly.txt", "h2")
	writeFile(t, e.src, "host-new.txt", "hn")

	st := e.status(id)
	want := "replace d2f, delete del.txt, delete dir, modify edit.txt, add emptydir, replace f2d, add f2d/inner.txt, " +
		"replace f2l, modify mode.sh, add new, add new/deep, add new/deep/n.txt"
	if got := changesOf(st.Changes); got != want || len(st.Conflicts) != 0 || st.SandboxPath != "/mnt/project" {
		t.Fatalf("status changes:\n got %s\nwant %s\nconflicts %+v", got, want, st.Conflicts)
	}
	js, _ := json.Marshal(st)
	wantKeys(t, js, "changes", "conflicts", "ok", "sandboxPath", "workspaceId")

	sr := e.mustSync(id)
	var paths []string
	for _, c := range st.Changes {
		paths = append(paths, c.Path)
	}
	applied := append([]string(nil), sr.Applied...)
	sort.Strings(applied)
	if !reflect.DeepEqual(applied, paths) {
		t.Errorf("applied %v, want %v", applied, paths)
	}
	if sr.ClonedFiles+sr.CopiedFiles != 5 || (e.mode == CopyModeClone && sr.ClonedFiles != 5) {
		t.Errorf("staged files: %d cloned, %d copied; want 5 (cloned on a reflink filesystem)", sr.ClonedFiles, sr.CopiedFiles)
	}
	js, _ = json.Marshal(sr)
	wantKeys(t, js, "applied", "changes", "clonedFiles", "copiedFiles", "ok", "workspaceId")

	host := snapshot(t, e.src)
	expect := snapshot(t, w)
	if host["hostonly.txt"] != "-rw-r--r-- h2" || host["host-new.txt"] != "-rw-r--r-- hn" {
		t.Errorf("unrelated host edits lost: %q %q", host["hostonly.txt"], host["host-new.txt"])
	}
	expect["hostonly.txt"], expect["host-new.txt"] = host["hostonly.txt"], host["host-new.txt"]
	sameTrees(t, expect, host)
	a, _ := os.Stat(filepath.Join(e.src, "edit.txt"))
	b, _ := os.Stat(filepath.Join(w, "edit.txt"))
	if !a.ModTime().Equal(b.ModTime()) {
		t.Errorf("synced file mtime %v, workspace %v", a.ModTime(), b.ModTime())
	}
	if st := e.status(id); len(st.Changes) != 0 || len(st.Conflicts) != 0 {
		t.Fatalf("status after sync: %+v", st)
	}

	// The workspace stays usable: edit and sync again.
	writeFile(t, w, "edit.txt", "three")
	if sr := e.mustSync(id); !reflect.DeepEqual(sr.Applied, []string{"edit.txt"}) {
		t.Errorf("second sync applied %v", sr.Applied)
	}
	if readFile(t, e.src, "edit.txt") != "three" || readFile(t, e.src, "hostonly.txt") != "h2" {
		t.Error("second sync: wrong host content")
	}
}

func TestConflicts(t *testing.T) {
	type tree = string // a directory
	cases := []struct {
		name            string
		path            string
		ws, host        Action
		wsEdit, hostEdt func(t *testing.T, w, src tree)
		resolve         func(t *testing.T, w, src tree)
	}{
		{
			name: "both edited", path: "a.txt", ws: ActionModify, host: ActionModify,
			wsEdit:  func(t *testing.T, w, src tree) { writeFile(t, w, "a.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "host") },
			resolve: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "base") }, // same bytes as the baseline
		},
		{
			name: "host deleted, workspace modified", path: "a.txt", ws: ActionModify, host: ActionDelete,
			wsEdit:  func(t *testing.T, w, src tree) { writeFile(t, w, "a.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) { os.Remove(filepath.Join(src, "a.txt")) },
			resolve: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "base") },
		},
		{
			name: "workspace deleted, host modified", path: "a.txt", ws: ActionDelete, host: ActionModify,
			wsEdit:  func(t *testing.T, w, src tree) { os.Remove(filepath.Join(w, "a.txt")) },
			hostEdt: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "host") },
			resolve: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "base") },
		},
		{
			name: "host type change", path: "a.txt", ws: ActionModify, host: ActionReplace,
			wsEdit: func(t *testing.T, w, src tree) { writeFile(t, w, "a.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) {
				os.Remove(filepath.Join(src, "a.txt"))
				os.Symlink("b.txt", filepath.Join(src, "a.txt"))
			},
			resolve: func(t *testing.T, w, src tree) {
				os.Remove(filepath.Join(src, "a.txt"))
				writeFile(t, src, "a.txt", "base")
			},
		},
		{
			name: "host mode-only change", path: "a.txt", ws: ActionModify, host: ActionModify,
			wsEdit:  func(t *testing.T, w, src tree) { writeFile(t, w, "a.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) { os.Chmod(filepath.Join(src, "a.txt"), 0o600) },
			resolve: func(t *testing.T, w, src tree) { os.Chmod(filepath.Join(src, "a.txt"), 0o644) },
		},
		{
			name: "workspace mode-only change", path: "a.txt", ws: ActionModify, host: ActionModify,
			wsEdit:  func(t *testing.T, w, src tree) { os.Chmod(filepath.Join(w, "a.txt"), 0o755) },
			hostEdt: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "host") },
			resolve: func(t *testing.T, w, src tree) { writeFile(t, src, "a.txt", "base") },
		},
		{
			name: "workspace removed a directory the host added to", path: "d/new.txt", ws: ActionDelete, host: ActionAdd,
			wsEdit:  func(t *testing.T, w, src tree) { os.RemoveAll(filepath.Join(w, "d")) },
			hostEdt: func(t *testing.T, w, src tree) { writeFile(t, src, "d/new.txt", "host") },
			resolve: func(t *testing.T, w, src tree) { os.Remove(filepath.Join(src, "d/new.txt")) },
		},
		{
			name: "host removed a directory the workspace added to", path: "d/new.txt", ws: ActionAdd, host: ActionDelete,
			wsEdit:  func(t *testing.T, w, src tree) { writeFile(t, w, "d/new.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) { os.RemoveAll(filepath.Join(src, "d")) },
			resolve: func(t *testing.T, w, src tree) { writeFile(t, src, "d/x.txt", "x") },
		},
		{
			name: "both added", path: "n.txt", ws: ActionAdd, host: ActionAdd,
			wsEdit:  func(t *testing.T, w, src tree) { writeFile(t, w, "n.txt", "ws") },
			hostEdt: func(t *testing.T, w, src tree) { writeFile(t, src, "n.txt", "host") },
			resolve: func(t *testing.T, w, src tree) { os.Remove(filepath.Join(src, "n.txt")) },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "a.txt", "base")
			writeFile(t, e.src, "b.txt", "b")
			writeFile(t, e.src, "d/x.txt", "x")
			id := e.create().WorkspaceID
			w := e.work(id)
			c.wsEdit(t, w, e.src)
			c.hostEdt(t, w, e.src)

			st := e.status(id)
			if len(st.Conflicts) != 1 || st.Conflicts[0].Path != c.path || st.Conflicts[0].Workspace != c.ws || st.Conflicts[0].Host != c.host {
				t.Fatalf("conflicts %+v; want %s at %s (workspace %s, host %s)", st.Conflicts, c.name, c.path, c.ws, c.host)
			}
			before := snapshot(t, e.src)
			sr := e.sync(id)
			if sr.OK || len(sr.Applied) != 0 || len(sr.Conflicts) != 1 {
				t.Fatalf("conflicted sync: %+v", sr)
			}
			js, _ := json.Marshal(sr)
			wantKeys(t, js, "applied", "changes", "conflicts", "ok", "workspaceId")
			sameTrees(t, before, snapshot(t, e.src)) // nothing applied

			// Positive control: with the host restored, the same workspace change syncs.
			c.resolve(t, w, e.src)
			if st := e.status(id); len(st.Conflicts) != 0 {
				t.Fatalf("after resolving: conflicts %+v", st.Conflicts)
			}
			e.mustSync(id)
			host := snapshot(t, e.src)
			work := snapshot(t, w)
			for p, d := range work {
				if host[p] != d {
					t.Errorf("after sync %s: host %q, workspace %q", p, host[p], d)
				}
			}
		})
	}
}

// Both sides making the same change is neither a change nor a conflict, and sync
// moves the baseline so a later host-only edit is not mistaken for a conflict.
func TestConvergedEdit(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "base")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "same")
	writeFile(t, e.src, "a.txt", "same")
	if st := e.status(id); len(st.Changes)+len(st.Conflicts) != 0 {
		t.Fatalf("status %+v", st)
	}
	e.mustSync(id)
	writeFile(t, e.src, "a.txt", "host later")
	if st := e.status(id); len(st.Changes)+len(st.Conflicts) != 0 {
		t.Fatalf("after a host-only edit: %+v", st)
	}
}

func TestSyncNeverWritesThroughHardLink(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.src), "outside.txt")
	os.WriteFile(outside, []byte("shared"), 0o644)
	if err := os.Link(outside, filepath.Join(e.src, "linked.txt")); err != nil {
		t.Fatal(err)
	}
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "linked.txt", "new content")
	e.mustSync(id)
	if got := readFile(t, e.src, "linked.txt"); got != "new content" {
		t.Errorf("host file %q", got)
	}
	if got, _ := os.ReadFile(outside); string(got) != "shared" {
		t.Errorf("the other hard link was written through: %q", got)
	}
}

// A host directory swapped for a symlink mid-sync must not redirect the write, and a
// host file edited mid-sync must not be overwritten: the sync stops and says so.
func TestSyncStopsWhenHostChanges(t *testing.T) {
	for _, c := range []struct {
		name, want string
		change     func(t *testing.T, src, outside string)
		restore    func(t *testing.T, src string)
	}{
		{
			name: "directory swapped for a symlink", want: "Host changed while staging sync: sub2/b.txt",
			change: func(t *testing.T, src, outside string) {
				os.Rename(filepath.Join(src, "sub2"), filepath.Join(src, "moved"))
				os.Symlink(outside, filepath.Join(src, "sub2"))
			},
			restore: func(t *testing.T, src string) {
				os.Remove(filepath.Join(src, "sub2"))
				os.Rename(filepath.Join(src, "moved"), filepath.Join(src, "sub2"))
			},
		},
		{
			name: "file edited", want: "Host changed while staging sync: sub2/b.txt (it was modified)",
			change:  func(t *testing.T, src, outside string) { writeFile(t, src, "sub2/b.txt", "host edit") },
			restore: func(t *testing.T, src string) { writeFile(t, src, "sub2/b.txt", "b") },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			outside := filepath.Join(filepath.Dir(e.src), "outside")
			writeFile(t, outside, "b.txt", "outside")
			writeFile(t, e.src, "sub/a.txt", "a")
			writeFile(t, e.src, "sub2/b.txt", "b")
			id := e.create().WorkspaceID
			w := e.work(id)
			writeFile(t, w, "sub/a.txt", "a2")
			writeFile(t, w, "sub2/b.txt", "b2")
			testHookApplied = func(rel string) {
				if rel == "sub/a.txt" {
					c.change(t, e.src, outside)
				}
			}
			defer func() { testHookApplied = nil }()
			sr := e.sync(id)
			testHookApplied = nil
			if sr.OK || !strings.Contains(sr.Error, c.want) || !reflect.DeepEqual(sr.Applied, []string{"sub/a.txt"}) || sr.Recovery == "" {
				t.Fatalf("sync %+v; want it stopped with %q after sub/a.txt", sr, c.want)
			}
			js, _ := json.Marshal(sr)
			wantKeys(t, js, "applied", "error", "ok", "recovery", "workspaceId")
			if got := readFile(t, outside, "b.txt"); got != "outside" {
				t.Fatalf("write escaped the source: outside/b.txt = %q", got)
			}
			if matches, _ := filepath.Glob(filepath.Join(e.src, ".autobox-sync-*")); len(matches) != 0 {
				t.Errorf("staging left behind: %v", matches)
			}
			// Positive control: with the host back as it was, the rest syncs.
			c.restore(t, e.src)
			if got := changesOf(e.status(id).Changes); got != "modify sub2/b.txt" {
				t.Fatalf("remaining changes %q", got)
			}
			e.mustSync(id)
			if readFile(t, e.src, "sub2/b.txt") != "b2" || readFile(t, e.src, "sub/a.txt") != "a2" {
				t.Error("retry did not apply")
			}
		})
	}
}

func TestDiscard(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "unsynced")
	before := snapshot(t, e.src)
	res, err := e.s.Discard(context.Background(), id)
	if err != nil || !res.OK || res.WorkspaceID != id {
		t.Fatalf("discard: %+v, %v", res, err)
	}
	sameTrees(t, before, snapshot(t, e.src))
	if exists(filepath.Join(e.storage, id)) || exists(filepath.Join(e.state, id+".json")) {
		t.Error("storage or record left after discard")
	}
	for _, op := range []func() error{
		func() error { _, err := e.s.Status(context.Background(), id); return err },
		func() error { _, err := e.s.Sync(context.Background(), id); return err },
		func() error { _, err := e.s.Discard(context.Background(), id); return err },
		func() error { _, err := e.s.Lookup(id); return err },
	} {
		if err := op(); !errors.Is(err, ErrNotFound) {
			t.Errorf("after discard: %v, want ErrNotFound", err)
		}
	}
	for _, bad := range []string{"../etc", "", strings.ToUpper(id), "00000000-0000-1000-8000-000000000000"} {
		if _, err := e.s.Status(context.Background(), bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("status(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestRecordsSurviveNewStore(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "edited")
	s2, err := Open(Options{StateDir: e.state})
	if err != nil {
		t.Fatal(err)
	}
	if ws, err := s2.Lookup(id); err != nil || ws.Source != e.src {
		t.Fatalf("lookup in a new store: %+v, %v", ws, err)
	}
	list, err := s2.List(context.Background())
	if err != nil || len(list) != 1 || list[0].ID != id || !list[0].Dirty || list[0].Source != e.src {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := s2.Sync(context.Background(), id); err != nil || readFile(t, e.src, "a.txt") != "edited" {
		t.Fatalf("sync through the new store: %v", err)
	}
	if list, _ := s2.List(context.Background()); list[0].Dirty {
		t.Error("still dirty after sync")
	}
	managed := s2.ManagedPaths()
	for _, want := range []string{e.state, e.storage} {
		if !contains(managed, want) {
			t.Errorf("managed paths %v lack %s", managed, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A file the host creates where the workspace adds one, after status, is kept.
func TestSyncKeepsFileThatAppeared(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "a2")
	writeFile(t, e.work(id), "b.txt", "workspace")
	testHookApplied = func(rel string) {
		if rel == "a.txt" {
			writeFile(t, e.src, "b.txt", "host")
		}
	}
	defer func() { testHookApplied = nil }()
	sr := e.sync(id)
	if sr.OK || !strings.Contains(sr.Error, "b.txt (something appeared there)") || readFile(t, e.src, "b.txt") != "host" {
		t.Fatalf("sync %+v; host b.txt %q", sr, readFile(t, e.src, "b.txt"))
	}
	testHookApplied = nil
	if st := e.status(id); len(st.Conflicts) != 1 || st.Conflicts[0].Path != "b.txt" {
		t.Fatalf("conflicts %+v", st.Conflicts)
	}
	os.Remove(filepath.Join(e.src, "b.txt")) // positive control
	e.mustSync(id)
	if readFile(t, e.src, "b.txt") != "workspace" {
		t.Error("retry did not add b.txt")
	}
}

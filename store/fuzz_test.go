package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// FuzzChanges drives change computation through the public API: a small source tree,
// a workspace of it, then edits on the workspace side and on the host side chosen by
// the fuzzer. Whatever the edits: status is deterministic and sorted, lists each path
// once, reports a conflict exactly where both sides touched a path, and a sync without
// conflicts leaves the host equal to the workspace, after which status is clean.
func FuzzChanges(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, []byte{4, 5})
	f.Add([]byte{1, 1, 1}, []byte{1})
	f.Add([]byte{}, []byte{7, 2, 9})
	f.Add([]byte{6, 0, 9, 3, 12}, []byte{})
	f.Fuzz(func(t *testing.T, workOps, hostOps []byte) {
		if len(workOps) > 12 || len(hostOps) > 12 {
			t.Skip("keep cases small")
		}
		dir := t.TempDir()
		src, storage, state := filepath.Join(dir, "src"), filepath.Join(dir, "storage"), filepath.Join(dir, "state")
		for _, p := range fuzzPaths[:4] {
			fuzzWrite(t, filepath.Join(src, p), "base "+p)
		}
		s, err := Open(Options{StateDir: state, DefaultStorage: storage})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		c, err := s.Create(ctx, CreateRequest{HostPath: src, SandboxPath: "/mnt/fz", StoragePath: storage, CopyMode: CopyModeAuto})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := s.Lookup(c.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		touchedW := fuzzApply(t, ws.Work, workOps, "w")
		touchedH := fuzzApply(t, src, hostOps, "h")

		st1, err := s.Status(ctx, c.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := s.Status(ctx, c.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(st1.Changes, st1.Conflicts) != fmt.Sprint(st2.Changes, st2.Conflicts) {
			t.Fatalf("status is not deterministic:\n%v\n%v", st1, st2)
		}
		seen := map[string]bool{}
		for i, ch := range st1.Changes {
			if seen[ch.Path] {
				t.Fatalf("%s listed twice: %v", ch.Path, st1.Changes)
			}
			seen[ch.Path] = true
			if i > 0 && st1.Changes[i-1].Path >= ch.Path {
				t.Fatalf("changes not sorted: %v", st1.Changes)
			}
		}
		for _, cf := range st1.Conflicts {
			if !touchedH[cf.Path] && !touchedAbove(touchedH, cf.Path) {
				t.Fatalf("conflict on %s, which the host never touched (host ops %v)", cf.Path, hostOps)
			}
		}
		if len(st1.Conflicts) > 0 {
			return
		}
		for p := range touchedW {
			if touchedH[p] && fuzzDiffers(filepath.Join(ws.Work, p), filepath.Join(src, p)) && seen[p] {
				t.Fatalf("%s changed on both sides to different content, yet no conflict", p)
			}
		}
		res, err := s.Sync(ctx, c.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK {
			t.Fatalf("sync without conflicts failed: %+v", res)
		}
		for _, ch := range st1.Changes {
			if fuzzDiffers(filepath.Join(ws.Work, ch.Path), filepath.Join(src, ch.Path)) {
				t.Fatalf("after sync, host %s differs from the workspace", ch.Path)
			}
		}
		st3, err := s.Status(ctx, c.WorkspaceID)
		if err != nil {
			t.Fatal(err)
		}
		if len(st3.Changes) != 0 || len(st3.Conflicts) != 0 {
			t.Fatalf("status after sync not clean: %+v", st3)
		}
	})
}

var fuzzPaths = []string{"a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g.txt", "d/h.txt"}

// fuzzApply performs one edit per byte on root and returns the paths it touched.
func fuzzApply(t *testing.T, root string, ops []byte, side string) map[string]bool {
	touched := map[string]bool{}
	for i, op := range ops {
		p := fuzzPaths[int(op>>2)%len(fuzzPaths)]
		full := filepath.Join(root, p)
		switch op % 4 {
		case 0: // write (add or modify)
			fuzzWrite(t, full, fmt.Sprintf("%s edit %d", side, i))
		case 1: // delete
			os.RemoveAll(full)
		case 2: // mode change
			os.Chmod(full, 0o600)
		case 3: // replace a file by a directory
			os.RemoveAll(full)
			fuzzWrite(t, filepath.Join(full, "inner.txt"), side)
		}
		touched[p] = true
	}
	return touched
}

func touchedAbove(touched map[string]bool, p string) bool {
	for q := range touched {
		if len(p) > len(q) && p[:len(q)+1] == q+"/" || len(q) > len(p) && q[:len(p)+1] == p+"/" {
			return true
		}
	}
	return false
}

func fuzzWrite(t *testing.T, path, content string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		// a file stands where a directory is needed: make room, as an editor would
		for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
				os.Remove(d)
				break
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.RemoveAll(path)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fuzzDiffers compares two paths by type, mode and content (directories by listing).
func fuzzDiffers(a, b string) bool {
	fa, ea := os.Lstat(a)
	fb, eb := os.Lstat(b)
	if (ea == nil) != (eb == nil) {
		return true
	}
	if ea != nil {
		return false
	}
	if fa.Mode() != fb.Mode() {
		return true
	}
	if fa.IsDir() {
		la, _ := os.ReadDir(a)
		lb, _ := os.ReadDir(b)
		na, nb := fuzzNames(la), fuzzNames(lb)
		return fmt.Sprint(na) != fmt.Sprint(nb)
	}
	ca, _ := os.ReadFile(a)
	cb, _ := os.ReadFile(b)
	return string(ca) != string(cb)
}

func fuzzNames(es []os.DirEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

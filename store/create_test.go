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
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// fillSource writes a small tree with distinctive modes and mtimes.
func fillSource(t *testing.T, src string) {
	t.Helper()
	old := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	writeFile(t, src, "a.txt", "alpha\n")
	writeFile(t, src, "sub/b.bin", strings.Repeat("0123456789abcdef", 64<<10/16))
	writeFile(t, src, "sub/empty.txt", "")
	os.Mkdir(filepath.Join(src, "sub", "emptydir"), 0o700)
	os.Chmod(filepath.Join(src, "a.txt"), 0o640)
	os.Chmod(filepath.Join(src, "sub", "b.bin"), 0o755)
	os.Symlink("sub/b.bin", filepath.Join(src, "link"))
	os.Symlink("nowhere", filepath.Join(src, "dangling"))
	for _, p := range []string{"a.txt", "sub/b.bin", "sub/emptydir", "sub"} {
		if err := os.Chtimes(filepath.Join(src, p), old, old); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(src, "sub"), 0o750)
}

// sameMetadata checks that copy has src's entries with the same type, permission bits,
// content or link target, and (files and directories) mtime.
func sameMetadata(t *testing.T, src, copy string) {
	t.Helper()
	sameTrees(t, snapshot(t, src), snapshot(t, copy))
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p)
		if rel == "." || d.Type()&os.ModeSymlink != 0 {
			return nil
		}
		a, _ := os.Lstat(p)
		b, err := os.Lstat(filepath.Join(copy, rel))
		if err != nil || !a.ModTime().Equal(b.ModTime()) {
			t.Errorf("%s: mtime %v, copy %v (%v)", rel, a.ModTime(), b.ModTime(), err)
		}
		return nil
	})
}

func TestCreateCloneSharesBlocks(t *testing.T) {
	if xfsDir == "" {
		t.Skip("needs a reflink filesystem: " + xfsWhy)
	}
	e := newEnvOn(t, xfsDir, CopyModeClone)
	fillSource(t, e.src)
	// hostPath through a symlink is refused, naming the canonical path (a link
	// could have been planted by an earlier call); the canonical path works.
	alias := filepath.Join(filepath.Dir(e.src), "alias")
	if err := os.Symlink(e.src, alias); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Create(context.Background(), CreateRequest{HostPath: alias, SandboxPath: "/mnt/project/", StoragePath: e.storage}); err == nil || !strings.Contains(err.Error(), "give "+e.src) {
		t.Fatalf("hostPath through a symbolic link: err %v, want a refusal naming %s", err, e.src)
	}
	res, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project/", StoragePath: e.storage, CopyMode: CopyModeClone})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.ClonedFiles != 3 || res.CopiedFiles != 0 || res.CopyMode != CopyModeClone || res.CopiedBy != "clone" || res.SandboxPath != "/mnt/project" || res.Mount.WorkspaceID != res.WorkspaceID {
		t.Fatalf("result %+v, want 3 cloned files", res)
	}
	for _, tree := range []string{"baseline", "work"} {
		dir := filepath.Join(e.storage, res.WorkspaceID, tree)
		sameMetadata(t, e.src, dir)
		shared, total, err := xfstest.SharedExtents(filepath.Join(dir, "sub/b.bin"))
		if err != nil || total == 0 || shared != total {
			t.Errorf("%s/sub/b.bin: %d of %d extents shared (%v); want all shared with the source", tree, shared, total, err)
		}
	}
	ws, err := e.s.Lookup(res.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Source != e.src || ws.Work != e.work(res.WorkspaceID) || ws.SandboxPath != "/mnt/project" || ws.Storage != e.storage {
		t.Errorf("lookup %+v", ws)
	}
	if !exists(filepath.Join(e.state, res.WorkspaceID+".json")) || exists(filepath.Join(e.state, res.WorkspaceID+".creating")) {
		t.Error("want the record and no creation marker")
	}
	js, _ := json.Marshal(res)
	wantKeys(t, js, "clonedFiles", "copiedBy", "copiedFiles", "copyMode", "mount", "ok", "sandboxPath", "workspaceId")
}

// wantKeys checks the top-level JSON object has exactly these keys.
func wantKeys(t *testing.T, js []byte, keys ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(keys)
	if !reflect.DeepEqual(got, keys) {
		t.Errorf("JSON keys %v, want %v in %s", got, keys, js)
	}
}

// noWorkspaceLeft checks a failed create left no storage entry, record or marker.
func noWorkspaceLeft(t *testing.T, e *env) {
	t.Helper()
	ents, _ := os.ReadDir(e.storage)
	if len(ents) != 0 {
		t.Errorf("storage not empty after failed create: %v", ents)
	}
	ents, _ = os.ReadDir(e.state)
	for _, d := range ents {
		if d.Name() != "operation.lock" {
			t.Errorf("state dir has %s after failed create", d.Name())
		}
	}
}

func TestCreateWithoutCopyOnWrite(t *testing.T) {
	if tmpfsDir == "" {
		t.Skip("needs a tmpfs: " + tmpfsWhy)
	}
	e := newEnvOn(t, tmpfsDir, CopyModeClone)
	fillSource(t, e.src)
	_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: CopyModeClone})
	if !errors.Is(err, ErrCloneUnsupported) || !errors.Is(err, unix.EOPNOTSUPP) ||
		!strings.Contains(err.Error(), "EOPNOTSUPP") || !strings.Contains(err.Error(), `copyMode "auto"`) {
		t.Fatalf("clone on tmpfs: %v; want EOPNOTSUPP suggesting copyMode \"auto\"", err)
	}
	noWorkspaceLeft(t, e)

	// auto, asked for or the default: a copy.
	for _, mode := range []string{CopyModeAuto, ""} {
		res, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if res.ClonedFiles != 0 || res.CopiedFiles != 3 || res.CopyMode != CopyModeAuto || res.CopiedBy != "copy" {
			t.Errorf("copyMode %q on tmpfs: %+v, want 3 copied", mode, res)
		}
		sameMetadata(t, e.src, e.work(res.WorkspaceID))
	}
}

func TestCreateAcrossFilesystems(t *testing.T) {
	if xfsDir == "" || tmpfsDir == "" {
		t.Skip("needs XFS and tmpfs: " + xfstest.Reasons(xfsWhy, tmpfsWhy))
	}
	e := newEnvOn(t, tmpfsDir, CopyModeClone)
	fillSource(t, e.src)
	storage, _ := os.MkdirTemp(xfsDir, "storage-")
	t.Cleanup(func() { os.RemoveAll(storage) })
	e.storage = storage
	_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: storage, CopyMode: CopyModeClone})
	if !errors.Is(err, ErrCloneUnsupported) || !errors.Is(err, unix.EXDEV) || !strings.Contains(err.Error(), "EXDEV") ||
		!strings.Contains(err.Error(), "different filesystems") {
		t.Fatalf("clone across filesystems: %v; want EXDEV", err)
	}
	noWorkspaceLeft(t, e)
	res, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: storage, CopyMode: CopyModeAuto})
	if err != nil || res.CopiedFiles != 3 {
		t.Fatalf("auto across filesystems: %+v, %v", res, err)
	}
}

func TestCreateValidation(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "file.txt", "x")
	inside := filepath.Join(e.src, "store")
	cases := []struct {
		name string
		req  CreateRequest
		want string
	}{
		{"relative hostPath", CreateRequest{HostPath: "src", SandboxPath: "/mnt/p"}, "absolute"},
		{"missing hostPath", CreateRequest{HostPath: e.src + "-missing", SandboxPath: "/mnt/p"}, "-missing\" does not exist"},
		{"hostPath is a file", CreateRequest{HostPath: filepath.Join(e.src, "file.txt"), SandboxPath: "/mnt/p"}, "not a directory"},
		{"sandboxPath root", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/.."}, "cannot be /"},
		{"relative sandboxPath", CreateRequest{HostPath: e.src, SandboxPath: "mnt/p"}, "absolute"},
		{"copyMode", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", CopyMode: "hardlink"}, "copyMode"},
		{"glob exclude", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", Excludes: []string{"*.log"}}, "glob"},
		{"dotdot exclude", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", Excludes: []string{"a/../b"}}, ".."},
		{"absolute exclude", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", Excludes: []string{"/etc"}}, "relative"},
		{"empty exclude", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", Excludes: []string{""}}, "empty"},
		{"whole-tree exclude", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", Excludes: []string{"./"}}, "whole source"},
		{"storage inside source", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: inside}, "overlaps"},
		{"source inside storage", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: filepath.Dir(e.src)}, "overlaps"},
		{"storage parent missing", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: "/nonexistent-autobox/a/b"}, "parent"},
		{"relative storage", CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: "storage"}, "absolute"},
		{"source is the state dir", CreateRequest{HostPath: e.state, SandboxPath: "/mnt/p", StoragePath: e.storage}, "autobox-managed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.req.StoragePath == "" {
				c.req.StoragePath = e.storage
			}
			c.req.CopyMode = cmp(c.req.CopyMode, e.mode)
			_, err := e.s.Create(context.Background(), c.req)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
	if exists(inside) {
		t.Error("a rejected storagePath inside the source was created")
	}
	// Positive control: the same source with valid values, excludes normalised.
	res, err := e.s.Create(context.Background(), CreateRequest{
		HostPath: e.src, SandboxPath: "/mnt//p/", StoragePath: e.storage, CopyMode: e.mode, // missing, parent exists
		Excludes: []string{"node_modules/", "./node_modules", "build"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := e.s.Lookup(res.WorkspaceID)
	if ws.SandboxPath != "/mnt/p" || !reflect.DeepEqual(ws.Excludes, []string{"node_modules", "build"}) {
		t.Errorf("workspace %+v: want sandboxPath /mnt/p and excludes [node_modules build]", ws)
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestCreateRejectsSpecialFiles(t *testing.T) {
	for _, c := range []struct {
		name string
		mode uint32
		dev  int
	}{{"FIFO", unix.S_IFIFO, 0}, {"socket", unix.S_IFSOCK, 0}, {"character device", unix.S_IFCHR, int(unix.Mkdev(1, 3))}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "ok.txt", "fine")
			os.Mkdir(filepath.Join(e.src, "odd"), 0o755)
			if err := unix.Mknod(filepath.Join(e.src, "odd", "special"), c.mode|0o644, c.dev); err != nil {
				t.Skipf("mknod %s: %v", c.name, err)
			}
			_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: e.mode})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"odd/special"`) || !strings.Contains(err.Error(), c.name) {
				t.Fatalf("err = %v; want ErrInvalid naming the %s at odd/special", err, c.name)
			}
			noWorkspaceLeft(t, e)
			// Positive control: excluded, the same tree copies.
			res := e.create("odd/special")
			if readFile(t, e.work(res.WorkspaceID), "ok.txt") != "fine" || exists(filepath.Join(e.work(res.WorkspaceID), "odd/special")) {
				t.Error("excluded special file: wrong working tree")
			}
		})
	}
}

func TestCreateSourceChanged(t *testing.T) {
	for _, c := range []struct {
		name, at string
		change   func(src string)
		want     string
	}{
		{"file rewritten", "b.txt", func(src string) { os.WriteFile(filepath.Join(src, "b.txt"), []byte("changed!"), 0o644) }, ": b.txt;"},
		{"entry added", "a.txt", func(src string) { os.WriteFile(filepath.Join(src, "new.txt"), nil, 0o644) }, ": .;"},
		{"file removed", "a.txt", func(src string) { os.Remove(filepath.Join(src, "b.txt")) }, ": b.txt;"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "a.txt", "a")
			writeFile(t, e.src, "b.txt", "b")
			testHookCreateFile = func(rel string) {
				if rel == c.at {
					c.change(e.src)
				}
			}
			defer func() { testHookCreateFile = nil }()
			_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: e.mode})
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "Source changed during creation"+c.want) {
				t.Fatalf("err = %v; want Source changed during creation at %s", err, c.want)
			}
			noWorkspaceLeft(t, e)
			testHookCreateFile = nil
			e.create() // positive control: no writer, no error
		})
	}
}

// TestCreateFIFOSwappedIn: a FIFO put where the scan saw a regular file is found out
// when the copy opens it, which does not block: the create fails as a changed source.
func TestCreateFIFOSwappedIn(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	writeFile(t, e.src, "b.txt", "b")
	b := filepath.Join(e.src, "b.txt")
	testHookCreateFile = func(rel string) {
		if rel == "b.txt" {
			os.Remove(b)
			if err := unix.Mkfifo(b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { testHookCreateFile = nil }()
	done := make(chan error, 1)
	go func() {
		_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: e.mode})
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("create blocked on a FIFO swapped into the source")
	}
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "Source changed during creation: b.txt;") {
		t.Fatalf("err = %v; want Source changed during creation at b.txt", err)
	}
	noWorkspaceLeft(t, e)
	// Positive control: the file back, the same tree copies.
	testHookCreateFile = nil
	os.Remove(b)
	writeFile(t, e.src, "b.txt", "b")
	e.create()
}

func TestCreateExcludes(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "keep.txt", "k")
	writeFile(t, e.src, "node_modules/pkg/index.js", "x")
	writeFile(t, e.src, "build/out.o", "o")
	writeFile(t, e.src, "sub/node_modules/y.js", "y") // exact paths only: not excluded
	res := e.create("node_modules", "./build/")
	w := e.work(res.WorkspaceID)
	if exists(filepath.Join(w, "node_modules")) || exists(filepath.Join(w, "build")) || !exists(filepath.Join(w, "sub/node_modules/y.js")) {
		t.Fatalf("working tree: %v", snapshot(t, w))
	}
	// Excluded host paths are outside the baseline: host edits there are neither
	// changes nor conflicts, and the workspace's own copy never reaches the host.
	writeFile(t, e.src, "node_modules/pkg/index.js", "host edit")
	writeFile(t, w, "node_modules/pkg/index.js", "workspace edit")
	writeFile(t, w, "keep.txt", "k2")
	st := e.status(res.WorkspaceID)
	if changesOf(st.Changes) != "modify keep.txt" || len(st.Conflicts) != 0 {
		t.Fatalf("status %+v", st)
	}
	e.mustSync(res.WorkspaceID)
	if readFile(t, e.src, "node_modules/pkg/index.js") != "host edit" || readFile(t, e.src, "keep.txt") != "k2" {
		t.Error("sync crossed an exclude or missed keep.txt")
	}
}

//go:build linux

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// Every out-of-space error names the filesystem that is full, which of
// autobox's places it holds (the host source, the workspace storage, the state
// directory), and what was and was not done (issue 32, item 5). The sync's are
// checked by TestSyncOutOfSpace and TestSyncFailedAtEachStep, the merge's by
// TestMergeFailedAtEachStep.

// wantSpaceError fails unless err is out of space and says role and done.
func wantSpaceError(t *testing.T, when string, err error, role, done string) {
	t.Helper()
	if err == nil || !errors.Is(err, unix.ENOSPC) || !strings.Contains(err.Error(), "which holds "+role+", ") || !strings.Contains(err.Error(), done) {
		t.Fatalf("%s: %v\nwant an out-of-space error naming the filesystem of %s, and saying %q", when, err, role, done)
	}
}

// A create out of space at each of its steps says where, and that nothing
// was created.
func TestCreateFailedAtEachStep(t *testing.T) {
	setup := func(e *env) {
		for i := range 3 {
			writeFile(t, e.src, fmt.Sprintf("d%d/f.txt", i), "f")
		}
	}
	ref := newEnv(t)
	setup(ref)
	steps := opSteps(t, func() error { ref.create(); return nil })
	defer func() { testHookStep = nil }()
	for k := 1; k <= len(steps); k++ {
		what := steps[k-1]
		when := fmt.Sprintf("out of space at step %d (%s)", k, what)
		if what == "create unmark" {
			continue // the workspace is whole: a failure to remove the marker is the next operation's
		}
		e := newEnv(t)
		setup(e)
		countSteps(func(n int, _ string) error {
			if n == k {
				return unix.ENOSPC
			}
			return nil
		})
		_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: e.mode})
		testHookStep = nil
		role := roleStorage
		if what == "create mark" || what == "create record" {
			role = roleState
		}
		wantSpaceError(t, when, err, role, "nothing was created")
		if list, err := e.s.List(context.Background()); err != nil || len(list) != 0 {
			t.Fatalf("%s: list after: %+v, %v", when, list, err)
		}
		if left, _ := filepath.Glob(filepath.Join(e.storage, "*")); len(left) != 0 {
			t.Fatalf("%s: storage left: %v", when, left)
		}
	}
}

// The same on real full filesystems (small tmpfs mounts, root only): the
// state directory full, the workspace storage full at different points of a
// create of many directories, links and files, and full before a merge.
func TestOutOfSpaceNamesFilesystem(t *testing.T) {
	base := t.TempDir()
	small := func(name string, size int64) string {
		mnt, unmount, err := xfstest.MountTmpfsSized(filepath.Join(base, name), size)
		if err != nil {
			t.Skip("needs small tmpfs mounts (root): ", err)
		}
		t.Cleanup(func() { unmount() })
		return mnt
	}
	ctx := context.Background()

	// The state directory full: create and a call's read-write mount.
	stateFS := small("state", 1<<20)
	e := newEnvOn(t, t.TempDir(), CopyModeAuto)
	writeFile(t, e.src, "a.txt", "a")
	s, err := Open(Options{StateDir: filepath.Join(stateFS, "state")})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Join(stateFS, "filler"), stateFS, 0)
	_, err = s.Create(ctx, CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: CopyModeAuto})
	wantSpaceError(t, "create with the state directory full", err, roleState, "nothing was created")
	_, err = s.HoldWritable([]string{t.TempDir()}, false)
	wantSpaceError(t, "a call's read-write mount with the state directory full", err, roleState, "the call was not run")
	os.Remove(filepath.Join(stateFS, "filler"))
	if _, err := s.Create(ctx, CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: CopyModeAuto}); err != nil {
		t.Fatalf("control: create with room in the state directory: %v", err)
	}

	// The storage full, at different points of a create.
	storeFS := small("storage", 2<<20)
	e = newEnvOn(t, t.TempDir(), CopyModeAuto)
	for i := range 40 {
		writeFile(t, e.src, fmt.Sprintf("d%02d/f.bin", i), strings.Repeat("x", 24<<10))
		os.Symlink("f.bin", filepath.Join(e.src, fmt.Sprintf("d%02d/link", i)))
	}
	e.storage = filepath.Join(storeFS, "ws")
	failed := 0
	for free := int64(0); free <= 2<<20; free += 256 << 10 {
		fill(t, filepath.Join(storeFS, "filler"), storeFS, free)
		_, err := e.s.Create(ctx, CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: CopyModeAuto})
		os.Remove(filepath.Join(storeFS, "filler"))
		if err == nil {
			break
		}
		failed++
		wantSpaceError(t, fmt.Sprintf("create with %d KiB free in the storage", free>>10), err, roleStorage, "nothing was created")
		if left, _ := filepath.Glob(filepath.Join(e.storage, "*")); len(left) != 0 {
			t.Fatalf("create with %d KiB free: storage left: %v", free>>10, left)
		}
	}
	if failed == 0 {
		t.Fatal("no create ran out of space")
	}
	// Out of inodes, so that making a directory or a link fails too.
	for _, inodes := range []int{20, 60, 100, 140} {
		mnt := filepath.Join(base, fmt.Sprint("inodes", inodes))
		os.MkdirAll(mnt, 0o755)
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=16m,nr_inodes=%d,mode=0755", inodes)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
		e.storage = filepath.Join(mnt, "ws")
		_, err := e.s.Create(ctx, CreateRequest{HostPath: e.src, SandboxPath: "/mnt/project", StoragePath: e.storage, CopyMode: CopyModeAuto})
		wantSpaceError(t, fmt.Sprintf("create with %d inodes in the storage", inodes), err, roleStorage, "nothing was created")
	}

	// The storage full before a merge: nothing changes.
	e = newEnvOn(t, t.TempDir(), CopyModeAuto)
	e.storage = filepath.Join(storeFS, "merge")
	id := setupMerge(t, e)
	fill(t, filepath.Join(storeFS, "filler"), storeFS, 0)
	_, err = e.s.Merge(ctx, id, mergePaths())
	os.Remove(filepath.Join(storeFS, "filler"))
	wantSpaceError(t, "merge with the storage full", err, roleStorage, "the merge changed nothing")
	if untouched := checkMerged(t, e, id, "after a merge out of space"); len(untouched) != 3 {
		t.Fatalf("a merge that changed nothing resolved %d paths", 3-len(untouched))
	}
}

//go:build linux

package test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/internal/xfstest"
)

// TestDefaultCopyMode: create without copyMode works on every filesystem (issue
// 30): it copies where the filesystem cannot clone (ext4, tmpfs), clones where
// it can (a reflink XFS), and the result says which; copyMode "clone" alone is
// refused where there is no copy-on-write.
func TestDefaultCopyMode(t *testing.T) {
	s := start(t)
	create := func(dir string, args map[string]any) (wsOut, bool) {
		t.Helper()
		src := filepath.Join(dir, "src")
		writeFile(t, filepath.Join(src, "a.txt"), "a")
		writeFile(t, filepath.Join(src, "d", "b.txt"), "b")
		storage := filepath.Join(dir, "storage")
		args["action"], args["hostPath"], args["sandboxPath"], args["storagePath"] = "create", src, "/mnt/p", storage
		return s.ws(args)
	}
	// The test's temp dir: ext4 here, or whatever this host has; tmpfs where
	// it can be mounted (root), which never clones.
	dirs := []string{t.TempDir()}
	if mnt, unmount, err := xfstest.MountTmpfs(t.TempDir()); err == nil {
		defer unmount()
		dirs = append(dirs, mnt)
	} else {
		t.Logf("no tmpfs of the test's own: %v", err)
	}
	for _, dir := range dirs {
		c, isErr := create(dir, map[string]any{})
		want := map[bool]string{true: "clone", false: "copy"}[c.ClonedFiles == 2]
		if isErr || !c.OK || c.CopyMode != "auto" || c.CopiedBy != want || c.ClonedFiles+c.CopiedFiles != 2 {
			t.Errorf("create without copyMode in %s: isError=%v %+v", dir, isErr, c)
		}
		if want == "copy" {
			// The positive control: copy-on-write alone is refused here, naming auto.
			c, isErr := create(filepath.Join(dir, "again"), map[string]any{"copyMode": "clone"})
			if !isErr || c.OK || !strings.Contains(c.Error, `copyMode "auto"`) {
				t.Errorf("copyMode clone where nothing clones: isError=%v %+v", isErr, c)
			}
		}
	}
	xfs, unmount, err := xfstest.MountXFS(t.TempDir(), 320<<20)
	if err != nil {
		t.Logf("the reflink half skipped: %v", err)
		return
	}
	defer unmount()
	c, isErr := create(xfs, map[string]any{})
	if isErr || !c.OK || c.CopyMode != "auto" || c.CopiedBy != "clone" || c.ClonedFiles != 2 {
		t.Errorf("create without copyMode on a reflink XFS: isError=%v %+v", isErr, c)
	}
}

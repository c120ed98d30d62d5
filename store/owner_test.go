package store

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWorkOwner: with WorkOwner (a root server whose commands run as 65534), create gives
// the working tree to that uid, links not followed, and leaves the workspace's directory
// searchable; the baseline stays root's. Status sees no change from the ownership, a
// change the owner makes syncs, and a merge keeps the owner of the file it rewrites. The
// control: without WorkOwner the tree is root's and 0700 above it.
func TestWorkOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another uid")
	}
	for _, owned := range []bool{true, false} {
		e := newEnv(t)
		if owned {
			var err error
			e.s, err = Open(Options{StateDir: e.state, WorkOwner: &Owner{UID: nobody, GID: nobody}})
			if err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, e.src, "a.txt", "one\n")
		writeFile(t, e.src, "dir/b.txt", "b\n")
		os.Symlink("/etc/passwd", filepath.Join(e.src, "link"))
		id := e.create().WorkspaceID
		want := 0
		if owned {
			want = nobody
		}
		for _, rel := range []string{"", "a.txt", "dir", "dir/b.txt", "link"} {
			if uid := ownerUID(t, filepath.Join(e.work(id), rel)); uid != want {
				t.Errorf("owned %v: work/%s belongs to uid %d, want %d", owned, rel, uid, want)
			}
		}
		if uid := ownerUID(t, "/etc/passwd"); uid != 0 {
			t.Fatalf("the link's target was given away: /etc/passwd uid %d", uid)
		}
		if uid := ownerUID(t, filepath.Join(e.storage, id, "baseline", "a.txt")); uid != 0 {
			t.Errorf("the baseline was given away: uid %d", uid)
		}
		fi, _ := os.Stat(filepath.Join(e.storage, id))
		if wantMode := os.FileMode(0o700); owned && fi.Mode().Perm() != 0o711 || !owned && fi.Mode().Perm() != wantMode {
			t.Errorf("owned %v: the workspace's directory is %v", owned, fi.Mode().Perm())
		}
		if st := e.status(id); len(st.Changes) != 0 {
			t.Errorf("owned %v: status after create: %s", owned, changesOf(st.Changes))
		}
		if !owned {
			continue
		}
		// A change as the owner would make it, then a conflicting host edit merged.
		writeFile(t, e.work(id), "a.txt", "one\ntwo\n")
		os.Chown(filepath.Join(e.work(id), "a.txt"), nobody, nobody)
		writeFile(t, e.src, "a.txt", "zero\none\n")
		if _, err := e.s.Merge(context.Background(), id, []string{"a.txt"}); err != nil {
			t.Fatalf("merge: %v", err)
		}
		if uid := ownerUID(t, filepath.Join(e.work(id), "a.txt")); uid != nobody {
			t.Errorf("the merged a.txt belongs to uid %d, want %d", uid, nobody)
		}
		e.mustSync(id)
		if got := readFile(t, e.src, "a.txt"); got != "zero\none\ntwo\n" {
			t.Errorf("synced a.txt = %q", got)
		}
	}
}

func ownerUID(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

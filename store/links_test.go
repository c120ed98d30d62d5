package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// linkSource is the tree every symlink case starts from. "esc" is an existing link
// that leaves the tree; "secret" is excluded.
func linkSource(t *testing.T, src string) {
	writeFile(t, src, "file.txt", "f")
	writeFile(t, src, "sub/inner.txt", "i")
	writeFile(t, src, "secret/key", "k")
	os.Symlink("../..", filepath.Join(src, "esc"))
	os.Symlink("sub/inner.txt", filepath.Join(src, "good"))
}

func TestSymlinkRules(t *testing.T) {
	cases := []struct {
		name   string
		links  map[string]string // path → target, created in the working tree in order
		bad    string            // the link reported, "" if all may sync
		reason string
	}{
		{"relative file", map[string]string{"l": "file.txt"}, "", ""},
		{"into a subdirectory", map[string]string{"sub/l": "../file.txt"}, "", ""},
		{"through an existing link", map[string]string{"l": "good"}, "", ""},
		{"dangling inside", map[string]string{"l": "missing/x"}, "", ""},
		{"to a directory", map[string]string{"l": "sub"}, "", ""},
		{"absolute", map[string]string{"l": "/etc/passwd"}, "l", "absolute"},
		{"leaves the root", map[string]string{"l": "../outside"}, "l", "leaves the workspace"},
		{"leaves from below", map[string]string{"sub/l": "../../x"}, "sub/l", "leaves the workspace"},
		{"leaves through another link", map[string]string{"l": "esc/etc/passwd"}, "l", "leaves the workspace"},
		{"through a new link", map[string]string{"x": "sub", "l": "x/inner.txt"}, "", ""},
		{"cycle", map[string]string{"a": "b", "b": "a"}, "a", "loops"},
		{"own ancestor", map[string]string{"sub/l": ".."}, "sub/l", "cyclic"},
		{"through an excluded path", map[string]string{"l": "secret/key"}, "l", "excluded path secret"},
		{"into an excluded path via a link", map[string]string{"x": "secret", "l": "x/key"}, "l", "excluded path secret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			linkSource(t, e.src)
			id := e.create("secret").WorkspaceID
			w := e.work(id)
			for p, target := range c.links {
				if err := os.Symlink(target, filepath.Join(w, p)); err != nil {
					t.Fatal(err)
				}
			}
			st := e.status(id)
			if c.bad == "" {
				if len(st.Conflicts) != 0 {
					t.Fatalf("conflicts %+v; want none", st.Conflicts)
				}
				e.mustSync(id)
				for p, target := range c.links {
					if got, err := os.Readlink(filepath.Join(e.src, p)); err != nil || got != target {
						t.Errorf("host %s -> %q (%v), want %q", p, got, err, target)
					}
				}
				return
			}
			var found *Conflict
			for i := range st.Conflicts {
				if st.Conflicts[i].Path == c.bad {
					found = &st.Conflicts[i]
				}
			}
			if found == nil || !strings.Contains(found.Reason, c.reason) || found.Host != "" {
				t.Fatalf("conflicts %+v; want %s at %s", st.Conflicts, c.reason, c.bad)
			}
			if sr := e.sync(id); sr.OK || len(sr.Applied) != 0 {
				t.Fatalf("sync %+v; want refused", sr)
			}
			// The allowed cases above are the positive controls for the same probe.
			for p := range c.links {
				if exists(filepath.Join(e.src, p)) {
					t.Errorf("refused link %s reached the host", p)
				}
			}
		})
	}
}

// Removing or replacing a directory that holds excluded paths would delete excluded
// host data, so it is refused; the same removal without excluded paths is fine.
func TestRemovingDirectoryWithExcludes(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(w string)
		wantA Action
	}{
		{"delete", func(w string) { os.RemoveAll(filepath.Join(w, "pkg")) }, ActionDelete},
		{"replace by file", func(w string) {
			os.RemoveAll(filepath.Join(w, "pkg"))
			os.WriteFile(filepath.Join(w, "pkg"), nil, 0o644)
		}, ActionReplace},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "pkg/index.js", "i")
			writeFile(t, e.src, "pkg/node_modules/dep/x.js", "dep")
			writeFile(t, e.src, "other/a.txt", "a")
			id := e.create("pkg/node_modules").WorkspaceID
			w := e.work(id)
			c.edit(w)
			st := e.status(id)
			if len(st.Conflicts) != 1 || st.Conflicts[0].Path != "pkg" || st.Conflicts[0].Workspace != c.wantA ||
				!strings.Contains(st.Conflicts[0].Reason, "excluded path pkg/node_modules") {
				t.Fatalf("conflicts %+v", st.Conflicts)
			}
			if sr := e.sync(id); sr.OK {
				t.Fatal("sync removed a directory holding excluded paths")
			}
			if readFile(t, e.src, "pkg/node_modules/dep/x.js") != "dep" {
				t.Fatal("excluded host data touched")
			}
			// Positive control: with pkg back, a directory without excluded paths can go.
			os.RemoveAll(filepath.Join(w, "pkg"))
			writeFile(t, w, "pkg/index.js", "i")
			os.RemoveAll(filepath.Join(w, "other"))
			if sr := e.mustSync(id); changesOf(sr.Changes) != "delete other" {
				t.Errorf("changes %s", changesOf(sr.Changes))
			}
			if exists(filepath.Join(e.src, "other")) || !exists(filepath.Join(e.src, "pkg/node_modules/dep/x.js")) {
				t.Error("wrong host tree after sync")
			}
		})
	}
}

func TestSpecialFilesInWorkspace(t *testing.T) {
	for _, c := range []struct {
		name string
		mode uint32
	}{{"FIFO", unix.S_IFIFO}, {"socket", unix.S_IFSOCK}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			writeFile(t, e.src, "a.txt", "a")
			id := e.create().WorkspaceID
			w := e.work(id)
			writeFile(t, w, "a.txt", "a2")
			if err := unix.Mknod(filepath.Join(w, "special"), c.mode|0o644, 0); err != nil {
				t.Skipf("mknod: %v", err)
			}
			st := e.status(id)
			if len(st.Conflicts) != 1 || st.Conflicts[0].Path != "special" || !strings.Contains(st.Conflicts[0].Reason, c.name) {
				t.Fatalf("conflicts %+v", st.Conflicts)
			}
			if sr := e.sync(id); sr.OK || exists(filepath.Join(e.src, "special")) || readFile(t, e.src, "a.txt") != "a" {
				t.Fatalf("sync with a %s: %+v", c.name, sr)
			}
			os.Remove(filepath.Join(w, "special")) // positive control
			e.mustSync(id)
			if readFile(t, e.src, "a.txt") != "a2" {
				t.Error("positive control did not sync")
			}
		})
	}
}

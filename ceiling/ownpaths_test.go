package ceiling

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestWayTo: the paths on the way to a path reached through links, as the
// dotfile managers lay them out: a relative link to a directory (stow), an
// absolute link to a file (home-manager), a link to a link, ".." in a
// link's text, and a tail that does not exist yet.
func TestWayTo(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, at string) {
		if err := os.Symlink(target, filepath.Join(d, at)); err != nil {
			t.Fatal(err)
		}
	}
	mk("home/.config")
	mk("home/dotfiles/autobox/.config/autobox")
	mk("store")
	os.WriteFile(filepath.Join(d, "store/policy.json"), []byte("{}"), 0o644)
	ln("../dotfiles/autobox/.config/autobox", "home/.config/autobox")                              // stow
	ln(filepath.Join(d, "store/policy.json"), "home/dotfiles/autobox/.config/autobox/policy.json") // home-manager
	ln("home/.config", "xdg")                                                                      // a relative link to a directory
	ln("xdg", "xdg2")                                                                              // to a link
	p := func(s string) string { return filepath.Join(d, s) }
	for _, c := range []struct {
		path string
		want []wayStep
	}{
		{"xdg2/autobox/policy.json", []wayStep{
			{Path: p("xdg2/autobox/policy.json")},
			{Path: p("xdg2"), Link: "xdg"},
			{Path: p("xdg"), Link: "home/.config"},
			{Path: p("home/.config/autobox"), Link: "../dotfiles/autobox/.config/autobox"},
			{Path: p("home/dotfiles/autobox/.config/autobox/policy.json"), Link: p("store/policy.json")},
			{Path: p("store/policy.json")},
		}},
		{"home/.config/autobox/new/file", []wayStep{
			{Path: p("home/.config/autobox/new/file")},
			{Path: p("home/.config/autobox"), Link: "../dotfiles/autobox/.config/autobox"},
			{Path: p("home/dotfiles/autobox/.config/autobox/new/file")},
		}},
		{"home/.config", []wayStep{{Path: p("home/.config")}, {Path: p("home/.config")}}},
	} {
		if got := wayTo(filepath.Join(d, c.path)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("wayTo(%s):\n got %+v\nwant %+v", c.path, got, c.want)
		}
	}
}

// TestOwnPathsNeverMountable: a relative --policy file, and a link loop on the
// way to an own path, still make never-mountable entries (the loop bounded).
func TestOwnPathsNeverMountable(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(d)
	os.WriteFile("policy.json", []byte("{}"), 0o600)
	os.Symlink("loop", filepath.Join(d, "loop"))
	c, err := Load(&Flags{File: "policy.json"}, []string{filepath.Join(d, "loop/state")})
	if err != nil {
		t.Fatal(err)
	}
	if c.File != filepath.Join(d, "policy.json") {
		t.Errorf("the file in force: %s", c.File)
	}
	want := map[string]bool{filepath.Join(d, "policy.json"): false, filepath.Join(d, "loop"): false}
	for _, n := range c.Never {
		if _, ok := want[n.Path]; ok && n.Own {
			want[n.Path] = true
		}
	}
	for p, found := range want {
		if !found {
			t.Errorf("%s is not never-mountable: %+v", p, c.Never)
		}
	}
	if es := c.Check(Request{Mounts: []MountAsk{{Param: "mounts[0]", Path: d, Mode: ReadWrite}}}, nil); len(es) == 0 {
		t.Errorf("a rw mount of the directory holding a relative --policy file is allowed")
	}
}

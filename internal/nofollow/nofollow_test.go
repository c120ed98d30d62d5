package nofollow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenDir: a link at any name of the path is refused, naming it; the
// directory it leads to, by its own path, opens (the control), as does /.
func TestOpenDir(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	if err := os.MkdirAll(filepath.Join(real, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, filepath.Join(link, "in")} {
		fd, err := OpenDir(p)
		if err == nil {
			unix.Close(fd)
		}
		if err == nil || !strings.Contains(err.Error(), link+" is a symbolic link") {
			t.Errorf("OpenDir(%s): want refused naming %s, got %v", p, link, err)
		}
		if r, err := OpenRoot(p); err == nil {
			r.Close()
			t.Errorf("OpenRoot(%s) followed the link", p)
		}
	}
	for _, p := range []string{"/", real, filepath.Join(real, "in")} {
		fd, err := OpenDir(p)
		if err != nil {
			t.Errorf("OpenDir(%s): %v", p, err)
			continue
		}
		unix.Close(fd)
		r, err := OpenRoot(p)
		if err != nil {
			t.Errorf("OpenRoot(%s): %v", p, err)
			continue
		}
		r.Close()
	}
	if _, err := OpenDir("relative"); err == nil {
		t.Error("OpenDir of a relative path succeeded")
	}
}

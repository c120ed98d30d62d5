package policy

import (
	"reflect"
	"testing"
)

func TestPlaceConflict(t *testing.T) {
	sb := &Sandbox{ReadOnly: []string{"/usr", "/etc", "/home/u/data"}, ReadWrite: []string{"/home/u/.cache/scratch"}, Links: []string{"/lib64"}, Devices: []string{"/dev/null"},
		Places: []Place{{Host: "/home/u/data", At: "/mnt/d"}, {Host: "/srv/x", At: "/mnt/x"}}}
	for at, want := range map[string]string{
		"/mnt/d": "", "/opt/y": "", "/home/u/data": "", // its own host path is no conflict
		"/usr/local/x": "/usr", "/etc": "/etc", "/lib64/x": "/lib64", "/tmp/a": "/tmp", "/proc": "/proc",
		"/home/u": "/home/u/.cache/scratch", "/mnt": "/mnt/d", "/mnt/x/y": "/mnt/x", "/": "/", "/.autobox-host": "/.autobox* (the sandbox's own names)", "/.autoboxX": "/.autobox* (the sandbox's own names)",
	} {
		if got := PlaceConflict(sb, at, "/home/u/data"); got != want {
			t.Errorf("PlaceConflict(%s) = %q, want %q", at, got, want)
		}
	}
}

func TestRewriteCommand(t *testing.T) {
	c := &Command{Argv: []string{"cat", "/mnt/d/f", "/mnt/dx"}, Dir: "/mnt/d/sub", Env: []string{"P=/mnt/d/bin:/usr/bin", "H=/home"},
		Sandbox: Sandbox{Places: []Place{{Host: "/h/d", At: "/mnt/d"}}}}
	RewriteCommand(c)
	want := &Command{Argv: []string{"cat", "/h/d/f", "/mnt/dx"}, Dir: "/h/d/sub", Env: []string{"P=/h/d/bin:/usr/bin", "H=/home"}}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
}

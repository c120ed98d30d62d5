package policy

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve: whatever the path, Resolve either refuses it or returns a mount whose
// sandbox root contains the cleaned path and a relative path that stays inside it.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"/mnt/a/x", "/mnt/a", "/mnt/a/../b", "/mnt/ab", "mnt/a", "", "/mnt/a/./x//y", "/mnt/b/\x00", "/mnt/a/..", "//mnt/a"} {
		f.Add(s)
	}
	mounts := []Mount{{Host: "/h/a", Sandbox: "/mnt/a"}, {Host: "/h/b", Sandbox: "/mnt/b", Writable: true}}
	f.Fuzz(func(t *testing.T, p string) {
		m, rel, err := Resolve(mounts, p)
		if err != nil {
			return
		}
		if strings.Contains(p, "..") && strings.Contains("/"+p+"/", "/../") {
			t.Fatalf("%q: accepted a path with ..", p)
		}
		if rel != "." && (path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || path.Clean(rel) != rel) {
			t.Fatalf("%q: rel %q escapes or is not clean", p, rel)
		}
		if !Within(path.Clean(p), m.Sandbox) {
			t.Fatalf("%q: resolved into %s, which does not hold it", p, m.Sandbox)
		}
	})
}

// FuzzRewriteArg: rewriting only ever replaces a whole sandbox-path component run with
// its host path; an argument with no mount path comes back byte-exact.
func FuzzRewriteArg(f *testing.F) {
	for _, s := range []string{"/mnt/ws/x", "--in=/mnt/ws", "/mnt/ws2/y", "cat '/mnt/ws/a b'", "x/mnt/ws", "$(/mnt/ws/run)", "", "/mnt/wsx"} {
		f.Add(s)
	}
	mounts := []Mount{{Host: "/host/ws", Sandbox: "/mnt/ws"}, {Host: "/host/other", Sandbox: "/mnt/ws2"}}
	f.Fuzz(func(t *testing.T, arg string) {
		out := RewriteArg(mounts, arg)
		if !strings.Contains(arg, "/mnt/ws") && out != arg {
			t.Fatalf("%q changed to %q without a mount path in it", arg, out)
		}
		// Undoing the rewrite gives the argument back: nothing else was touched.
		back := strings.ReplaceAll(strings.ReplaceAll(out, "/host/other", "/mnt/ws2"), "/host/ws", "/mnt/ws")
		if !strings.Contains(arg, "/host/") && back != arg {
			t.Fatalf("%q -> %q does not round-trip (%q)", arg, out, back)
		}
	})
}

// FuzzResolveMounts: a validated mount list never has nested or duplicate sandbox
// paths, "/" as a sandbox path, or a relative host path.
func FuzzResolveMounts(f *testing.F) {
	dir := f.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	f.Add(dir, "/mnt/a", "ro", dir+"/sub", "/mnt/b", "rw")
	f.Add(dir, "/mnt/a", "rw", dir+"/sub", "/mnt/a/b", "ro")
	f.Add("rel", "/", "x", "", "", "")
	f.Fuzz(func(t *testing.T, h1, s1, m1, h2, s2, m2 string) {
		ms, err := ResolveMounts([]MountSpec{{HostPath: h1, SandboxPath: s1, Mode: m1}, {HostPath: h2, SandboxPath: s2, Mode: m2}}, nil, nil)
		if err != nil {
			return
		}
		for i, a := range ms {
			if a.Sandbox == "/" || !filepath.IsAbs(a.Host) || path.Clean(a.Sandbox) != a.Sandbox {
				t.Fatalf("bad mount accepted: %+v", a)
			}
			for j, b := range ms {
				if i != j && Within(a.Sandbox, b.Sandbox) {
					t.Fatalf("nested mounts accepted: %+v %+v", a, b)
				}
			}
		}
	})
}

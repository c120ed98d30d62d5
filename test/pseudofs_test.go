//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 20 item 5: execute_js with a read-only mount of /proc read the
// server's environment (/proc/self is whoever reads, and the bridge reads as
// the server), its memory map and descriptors. The bridge serves no kernel
// pseudo-filesystem: a mount of one is refused before the call runs, and a
// file or directory on one, reached through a mount that holds it (/ itself),
// is refused at each use, naming the mount. The server's environment holds a
// canary (AUTOBOX_TEST_SECRET) that no result may show.

const serverCanary = "canary-7c1e"

func TestJSPseudoFilesystems(t *testing.T) {
	// A mount of / holds the user's secrets directories, which the ceiling's
	// defaults keep out of every mount: lifted here, for / is what this tests.
	s := start(t, "serve", "--lift-never-mount", "*")
	for _, c := range []struct{ host, kind string }{
		{"/proc", "proc"}, {"/sys", "sysfs"}, {"/sys/fs/cgroup/memory", "cgroup"}, {"/dev/pts", "devpts"},
	} {
		if _, err := os.Stat(c.host); err != nil {
			continue
		}
		o := s.wantJSError(map[string]any{"code": `host.readFile("/mnt/p/self/environ")`,
			"mounts": []map[string]any{{"hostPath": c.host, "sandboxPath": "/mnt/p", "mode": "ro"}}},
			"hostPath "+c.host+" (at /mnt/p) is a "+c.kind+" filesystem")
		if strings.Contains(string(o.Result), serverCanary) {
			t.Errorf("%s: the server's environment: %s", c.host, o.Result)
		}
	}
	// A mount of / holds /proc and /sys: each file there is refused.
	mine := t.TempDir()
	writeFile(t, filepath.Join(mine, "f.txt"), "mine")
	root := []map[string]any{{"hostPath": "/", "sandboxPath": "/mnt/root", "mode": "ro"}}
	for _, code := range []string{
		`host.readFile("/mnt/root/proc/self/environ")`,
		`host.readFile("/mnt/root/proc/self/maps")`,
		`host.listDir("/mnt/root/proc/self/fd")`,
		`host.listDir("/mnt/root/proc")`,
		`host.readFile("/mnt/root/sys/kernel/mm/transparent_hugepage/enabled")`,
	} {
		o := s.wantJSError(map[string]any{"code": code, "mounts": root}, "filesystem (reached through mount /mnt/root)")
		if strings.Contains(string(o.Result), serverCanary) {
			t.Errorf("%s: the server's environment: %s", code, o.Result)
		}
	}
	// Links to the server's own descriptors end there too.
	for _, code := range []string{`host.readFile("/mnt/root/dev/stdin")`, `host.listDir("/mnt/root/dev/fd")`} {
		o, _ := s.js(map[string]any{"code": code, "mounts": root})
		if o.OK || o.err() == "" {
			t.Errorf("%s: want an error, got %+v", code, o)
		}
	}
	// Positive control: a regular file through the same mount of /, and the
	// same read through a mount of its own directory.
	o := s.mustJS(map[string]any{"code": `host.readFile("/mnt/root` + filepath.Join(mine, "f.txt") + `")`, "mounts": root})
	if string(o.Result) != `"mine"` {
		t.Errorf("positive control through /: %s", o.Result)
	}
	o = s.mustJS(map[string]any{"code": `host.readFile("/mnt/d/f.txt")`, "mounts": []map[string]any{{"hostPath": mine, "sandboxPath": "/mnt/d"}}})
	if string(o.Result) != `"mine"` {
		t.Errorf("positive control: %s", o.Result)
	}
}

// TestJSPseudoFilesystemWrite: a proc filesystem mounted inside a read-write
// mount is neither written nor read through it (root: it mounts one).
func TestJSPseudoFilesystemWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a proc filesystem for the test needs root")
	}
	s := start(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "p")
	os.Mkdir(p, 0o755)
	if err := syscall.Mount("proc", p, "proc", 0, ""); err != nil {
		t.Skipf("mount -t proc: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(p, syscall.MNT_DETACH) })
	rw := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "rw"}}
	s.wantJSError(map[string]any{"code": `host.writeFile("/mnt/d/p/self/comm", "x")`, "mounts": rw}, "is on a proc filesystem (reached through mount /mnt/d)")
	s.wantJSError(map[string]any{"code": `host.readFile("/mnt/d/p/self/environ")`, "mounts": rw}, "is on a proc filesystem (reached through mount /mnt/d)")
	// Positive control: beside it.
	s.mustJS(map[string]any{"code": `host.writeFile("/mnt/d/x.txt", "x")`, "mounts": rw})
	if readFile(t, filepath.Join(dir, "x.txt")) != "x" {
		t.Error("positive control: not written")
	}
}

// TestJSPseudoFilesystemsCLI: `autobox js --mount /proc:...` is refused too.
func TestJSPseudoFilesystemsCLI(t *testing.T) {
	h := newCLIHome(t)
	// A mount of / holds the user's secrets directories: lifted in this test's
	// own ceiling file (see TestJSPseudoFilesystems).
	writeFile(t, filepath.Join(h.dir, "config", "autobox", "policy.json"), `{"liftNeverMount": ["*"]}`)
	r := h.run("", "js", "--mount", "/proc:/mnt/p", "-e", `host.readFile("/mnt/p/self/environ")`)
	if r.code == 0 || !strings.Contains(r.stderr, "is a proc filesystem") || strings.Contains(r.stdout, "PATH=") {
		t.Errorf("mount of /proc: %s", r)
	}
	r = h.run("", "js", "--mount", "/:/mnt/root", "-e", `host.readFile("/mnt/root/proc/self/environ")`)
	if r.code == 0 || !strings.Contains(r.stderr, "is on a proc filesystem") || strings.Contains(r.stdout, "PATH=") {
		t.Errorf("/proc through a mount of /: %s", r)
	}
	// Positive control.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "mine")
	h.want(h.run("", "js", "--mount", dir+":/mnt/d", "-e", `host.readFile("/mnt/d/f")`), 0, `"mine"`, "")
}

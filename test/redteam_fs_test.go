//go:build linux

package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Red-team tests of the filesystem promises (SECURITY.md: "exec_command",
// "Host paths a caller names", "Workspaces"): each is an attack a hostile
// command would make, with the same action, allowed, as its control.

// flipScript swaps two names of a directory (sys.argv[1]) for ever with
// renameat2(RENAME_EXCHANGE), so each of them is a directory one moment and a
// symbolic link the next; it says "flipping" once it runs.
const flipScript = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
print("flipping", flush=True)
while libc.renameat2(-100, b"sub", -100, b"alt", 2) == 0:
    pass
print("renameat2: errno", ctypes.get_errno(), flush=True)
`

// TestMountLinkSwappedAfterCheck: a mount's hostPath is checked to be
// canonical when the call arrives, and must still be what is bound and
// allowed when its command starts. A session with a rw mount of proj swaps
// proj/sub, a directory, with proj/alt, a symbolic link to a private
// directory, as fast as it can; meanwhile calls mount proj/sub (ro and rw) and
// try to read the private file and write beside it. A call may be refused (the
// link seen at the check, or when the launcher binds it), or run with the
// directory; it never reaches the private directory. The controls: the same
// mount, with the swapping stopped, shows sub's file, and the private
// directory mounted by its own path is read and written. In each mode this
// process's servers have, and in landlock-only mode, where Landlock's rules
// alone hold the paths.
func TestMountLinkSwappedAfterCheck(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to swap names with renameat2 inside the sandbox")
	}
	t.Run(hostMode(), func(t *testing.T) { mountLinkSwapped(t, start(t)) })
	t.Run("landlock-only", func(t *testing.T) {
		mountLinkSwapped(t, startEnv(t, []string{"AUTOBOX_NO_NAMESPACES=1"}))
	})
}

// openTree makes, in a temporary directory, proj/sub (holding "ok"), private
// (holding "secret") and the other directories named, each open to all: a
// root server without namespaces runs commands as 65534, and only the
// sandbox is to keep them from the private directory. It returns the paths
// of proj and private, and the directory holding them.
func openTree(t *testing.T, more ...string) (base, proj, private string) {
	t.Helper()
	base = t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	proj, private = filepath.Join(base, "proj"), filepath.Join(base, "private")
	for _, d := range append([]string{"proj", "proj/sub", "private"}, more...) {
		d = filepath.Join(base, d)
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o777)
	}
	writeFile(t, filepath.Join(private, "secret"), "private data\n")
	writeFile(t, filepath.Join(proj, "sub", "ok"), "sub's own\n")
	return base, proj, private
}

func mountLinkSwapped(t *testing.T, s *session) {
	base, proj, private := openTree(t, "tools")
	tools := filepath.Join(base, "tools")
	writeFile(t, filepath.Join(tools, "flip.py"), flipScript)
	mustSymlink(t, private, filepath.Join(proj, "alt"))
	planted := filepath.Join(private, "planted")

	o := s.startSession(map[string]any{
		"command":   []string{"python3", "/mnt/tools/flip.py", "/mnt/proj"},
		"mounts":    []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}, {"hostPath": tools, "sandboxPath": "/mnt/tools"}},
		"timeoutMs": 120000,
	})
	if out, f := s.until(o.SessionID, "flipping", o.Stdout); !strings.Contains(out, "flipping") {
		t.Fatalf("the swapping session did not start: %q %+v", out, f)
	}
	attack := bash("cat " + filepath.Join(private, "secret") + " /mnt/o/secret 2>/dev/null; echo planted > " + planted + " 2>/dev/null; exit 0")
	ran, refused := 0, 0
	for i := 0; i < 80; i++ {
		mode := []string{"ro", "rw"}[i%2]
		res := s.callRaw("exec_command", map[string]any{"command": attack, "mounts": []map[string]any{{"hostPath": filepath.Join(proj, "sub"), "sandboxPath": "/mnt/o", "mode": mode}}})
		if res.IsError {
			refused++
			continue
		}
		ran++
		if out, _ := json.Marshal(res.StructuredContent); strings.Contains(string(out), "private data") {
			t.Fatalf("attempt %d (%s): a mount of proj/sub read the private directory it was swapped for: %s", i, mode, out)
		}
		if _, err := os.Lstat(planted); err == nil {
			t.Fatalf("attempt %d (%s): a mount of proj/sub wrote into the private directory it was swapped for", i, mode)
		}
	}
	t.Logf("80 mounts of a name being swapped: %d ran, %d refused", ran, refused)
	if fo, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"}); isErr {
		t.Fatalf("closing the swapping session: %+v", fo)
	}
	if fi, err := os.Lstat(filepath.Join(proj, "sub")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(proj, "sub"), unix.AT_FDCWD, filepath.Join(proj, "alt"), unix.RENAME_EXCHANGE); err != nil {
			t.Fatal(err)
		}
	}

	// Controls: the directory, mounted while nothing swaps it; the private
	// directory by its own path, read and written.
	sub := []map[string]any{{"hostPath": filepath.Join(proj, "sub"), "sandboxPath": "/mnt/o"}}
	if o, isErr := s.exec(map[string]any{"command": []string{"cat", "/mnt/o/ok"}, "mounts": sub}); isErr || o.Stdout != "sub's own\n" {
		t.Errorf("control: proj/sub mounted: isError=%v %+v", isErr, o)
	}
	priv := []map[string]any{{"hostPath": private, "sandboxPath": "/mnt/o", "mode": "rw"}}
	if o, isErr := s.exec(map[string]any{"command": bash("cat /mnt/o/secret && echo planted > /mnt/o/planted"), "mounts": priv}); isErr || o.Stdout != "private data\n" || o.code() != 0 {
		t.Errorf("control: the private directory mounted by its path: isError=%v %+v", isErr, o)
	}
	if _, err := os.Lstat(planted); err != nil {
		t.Errorf("control: the private directory's rw mount did not write: %v", err)
	}
}

// TestWorkspaceSourceSwappedForLink: a workspace's source is opened without
// following a link anywhere on its path, not only at its last name. A call
// with a rw mount of proj replaces proj/pkg, a directory above the source
// proj/pkg/app, with a link to other, which holds an app directory too; the
// workspace has added a file. status and sync are refused naming the link, and
// nothing is written into other/app (it was: the new file, shown in status as
// an ordinary add). The control: with pkg a directory again, the same sync
// writes the file into the source.
func TestWorkspaceSourceSwappedForLink(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	base, proj, _ := openTree(t, "proj/pkg/app", "other/app")
	other, src := filepath.Join(base, "other"), filepath.Join(proj, "pkg", "app")
	writeFile(t, filepath.Join(src, "readme"), "the source\n")
	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/app", "storagePath": t.TempDir(), "copyMode": "auto"})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	ws := []map[string]any{{"workspaceId": c.WorkspaceID}}
	if o, _ := s.exec(map[string]any{"command": bash("echo planted > /mnt/app/conftest.py"), "mounts": ws}); o.code() != 0 {
		t.Fatalf("writing in the workspace: %+v", o)
	}
	swap := bash("cd /mnt/proj && mv pkg pkg.real && ln -s " + other + " pkg")
	if o, _ := s.exec(map[string]any{"command": swap, "mounts": []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}}}); o.code() != 0 {
		t.Fatalf("swapping pkg for a link: %+v", o)
	}
	for _, action := range []string{"status", "sync"} {
		res := s.callRaw("copy_then_sync", map[string]any{"action": action, "workspaceId": c.WorkspaceID})
		if msg := errorOf(res) + textOf(res); !res.IsError || !strings.Contains(msg, filepath.Join(proj, "pkg")+" is a symbolic link") {
			t.Errorf("%s with a link above the source: want refused naming %s/pkg, got isError=%v %s", action, proj, res.IsError, msg)
		}
	}
	if _, err := os.Lstat(filepath.Join(other, "app", "conftest.py")); err == nil {
		t.Fatalf("sync wrote the workspace's file through the link into %s/app", other)
	}

	// Control: pkg a directory again, the same sync applies.
	if err := os.Remove(filepath.Join(proj, "pkg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(proj, "pkg.real"), filepath.Join(proj, "pkg")); err != nil {
		t.Fatal(err)
	}
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID}); isErr || !sy.OK || len(sy.Applied) != 1 {
		t.Fatalf("control: sync with the source's path as created: %+v", sy)
	}
	if got := readFile(t, filepath.Join(src, "conftest.py")); got != "planted\n" {
		t.Errorf("control: the synced file: %q", got)
	}
}

// TestJSMountSwappedBeforeUse: execute_js opens a mount's root when its code
// first uses it, which can be long after the call's hostPath was checked; it
// opens it with no link on the way. A session with a rw mount of proj waits
// for the code's signal, then replaces proj/sub with a link to a private
// directory; the code, which mounts proj/sub, then reads through it. Refused
// naming the link; the controls: sub's own file through the same mount once
// sub is a directory again, and the private file by its own path.
func TestJSMountSwappedBeforeUse(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	base, proj, private := openTree(t, "sig")
	sig := filepath.Join(base, "sig")
	swap := bash("while [ ! -e /mnt/sig/go ]; do sleep 0.01; done; cd /mnt/proj && mv sub sub.real && ln -s " + private + " sub && touch /mnt/sig/done; sleep 60")
	o := s.startSession(map[string]any{"command": swap, "timeoutMs": 60000, "mounts": []map[string]any{
		{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}, {"hostPath": sig, "sandboxPath": "/mnt/sig", "mode": "rw"}}})
	code := `await host.writeFile('/mnt/sig/go', '1');
for (let i = 0; i < 1000; i++) {
  try { await host.readFile('/mnt/sig/done'); break } catch (e) {}
  await new Promise(r => setTimeout(r, 10));
}
try { return await host.readFile('/mnt/o/secret') } catch (e) { return 'refused: ' + e.message }`
	mounts := []map[string]any{{"hostPath": filepath.Join(proj, "sub"), "sandboxPath": "/mnt/o"}, {"hostPath": sig, "sandboxPath": "/mnt/sig", "mode": "rw"}}
	j := s.mustJS(map[string]any{"code": code, "mounts": mounts, "timeoutMs": 10000})
	if _, err := os.Lstat(filepath.Join(sig, "done")); err != nil {
		t.Fatalf("the session did not swap sub for a link: %v (result %s)", err, j.Result)
	}
	if strings.Contains(string(j.Result), "private data") || !strings.Contains(string(j.Result), "symbolic link") {
		t.Errorf("a mount of proj/sub swapped for a link to a private directory before first use: want refused naming the link, got %s", j.Result)
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})

	// Controls: sub a directory again; the private directory by its own path.
	if err := os.Remove(filepath.Join(proj, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(proj, "sub.real"), filepath.Join(proj, "sub")); err != nil {
		t.Fatal(err)
	}
	if j := s.mustJS(map[string]any{"code": "return host.readFile('/mnt/o/ok')", "mounts": mounts}); string(j.Result) != `"sub's own\n"` {
		t.Errorf("control: proj/sub mounted: %s", j.Result)
	}
	priv := []map[string]any{{"hostPath": private, "sandboxPath": "/mnt/o"}}
	if j := s.mustJS(map[string]any{"code": "return host.readFile('/mnt/o/secret')", "mounts": priv}); string(j.Result) != `"private data\n"` {
		t.Errorf("control: the private directory by its path: %s", j.Result)
	}
}

// TestWorkspaceBareRepository: git takes any directory holding HEAD, objects
// and refs for a (bare) repository when run in it or below it, and runs its
// config's core.pager as soon as it writes to a terminal there; so a
// workspace that makes src such a directory chooses what host git runs in src.
// Such a change is a conflict, like a nested .git, and nothing is applied; so
// is an edit of the config of a bare repository the source holds. The
// controls: a file named HEAD alone and an ordinary edit in src sync, and so
// does git's data (objects) in the source's bare repository.
func TestWorkspaceBareRepository(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "src", "main.c"), "int main;\n")
	writeFile(t, filepath.Join(src, "fixture.git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(src, "fixture.git", "config"), "[core]\n\tbare = true\n")
	for _, d := range []string{"fixture.git/objects", "fixture.git/refs"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": t.TempDir(), "copyMode": "auto"})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	ws := []map[string]any{{"workspaceId": c.WorkspaceID}}
	write := func(script string) {
		t.Helper()
		if o, _ := s.exec(map[string]any{"command": bash("cd /mnt/src && " + script), "mounts": ws}); o.code() != 0 {
			t.Fatalf("%s: %+v", script, o)
		}
	}
	conflicts := func() string {
		t.Helper()
		st, _ := s.ws(map[string]any{"action": "status", "workspaceId": c.WorkspaceID})
		raw, _ := json.Marshal(st.Conflicts)
		return string(raw)
	}
	write(`mkdir src/objects src/refs && echo 'ref: refs/heads/main' > src/HEAD && printf '[core]\n\tpager = "touch /tmp/pwned; cat"\n' > src/config && echo 'int main() {}' > src/main.c`)
	if got := conflicts(); !strings.Contains(got, `"path":"src/config"`) || !strings.Contains(got, "makes src a git repository") {
		t.Errorf("a bare repository made in src: want a conflict naming src/config, got %s", got)
	}
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID}); !isErr || sy.OK || len(sy.Applied) != 0 {
		t.Errorf("sync with a bare repository made in src applied: %+v", sy)
	}
	if _, err := os.Lstat(filepath.Join(src, "src", "config")); err == nil || readFile(t, filepath.Join(src, "src", "main.c")) != "int main;\n" {
		t.Fatalf("the host changed")
	}

	// Control: without objects and refs, src is no repository; HEAD and the edit sync.
	write("rm -r src/objects src/refs src/config")
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID}); isErr || !sy.OK || len(sy.Applied) != 2 {
		t.Fatalf("control: a file named HEAD and an edit: %+v", sy)
	}

	// The source's own bare repository: its config is git's configuration, its
	// objects git's data (the control).
	write(`printf '[core]\n\tpager = "touch /tmp/pwned; cat"\n' >> fixture.git/config`)
	if got := conflicts(); !strings.Contains(got, `"path":"fixture.git/config"`) || !strings.Contains(got, "in the git repository fixture.git") {
		t.Errorf("the config of the source's bare repository edited: want a conflict, got %s", got)
	}
	write("printf '[core]\n\tbare = true\n' > fixture.git/config && mkdir fixture.git/objects/ab && echo x > fixture.git/objects/ab/cd")
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID}); isErr || !sy.OK || len(sy.Applied) != 2 {
		t.Errorf("control: an object in the source's bare repository: %+v", sy)
	}
}

// TestReadOnlyMountAttributes: with a root of its own, a command cannot set
// extended attributes on a read-only mount's files (Landlock has no right for
// them; the read-only bind refuses them with EROFS), nor rename a file of its
// rw mount over one. The control: the same on the rw mount's file succeeds.
func TestReadOnlyMountAttributes(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("landlock-only: extended attributes of files the user owns are not guarded (SECURITY.md)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 to call setxattr with")
	}
	s := start(t)
	_, proj, private := openTree(t)
	if err := unix.Setxattr(filepath.Join(proj, "sub", "ok"), "user.autobox-test", []byte("1"), 0); err != nil {
		t.Skipf("this filesystem takes no user extended attributes: %v", err)
	}
	script := `import os, sys
for f in sys.argv[1:]:
    try:
        os.setxattr(f, "user.autobox-test", b"2")
        print(f, "setxattr ok")
    except OSError as e:
        print(f, "setxattr", e.strerror)
try:
    os.rename("/mnt/rw/ok", "/mnt/ro/secret")
    print("rename-over ok")
except OSError as e:
    print("rename-over", e.strerror)
`
	o, _ := s.exec(map[string]any{"command": []string{"python3", "-c", script, "/mnt/ro/secret", "/mnt/rw/ok"}, "mounts": []map[string]any{
		{"hostPath": private, "sandboxPath": "/mnt/ro"}, {"hostPath": filepath.Join(proj, "sub"), "sandboxPath": "/mnt/rw", "mode": "rw"}}})
	if !strings.Contains(o.Stdout, "secret setxattr Read-only file system") || !strings.Contains(o.Stdout, "rename-over Invalid cross-device link") {
		t.Errorf("setxattr and rename over a ro mount's file: want EROFS and EXDEV, got %+v", o)
	}
	if !strings.Contains(o.Stdout, "ok setxattr ok") {
		t.Errorf("control: setxattr on the rw mount's file: %+v", o)
	}
	if v, err := unix.Getxattr(filepath.Join(private, "secret"), "user.autobox-test", make([]byte, 8)); err == nil {
		t.Errorf("the ro file got an attribute (%d bytes)", v)
	}
	if got := readFile(t, filepath.Join(private, "secret")); got != "private data\n" {
		t.Errorf("the ro file changed: %q", got)
	}
}

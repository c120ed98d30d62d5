//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceStorageOutOfReach (issue 20, item 8): a workspace's storage is
// never inside anything a call can write. The reproducer: a session
// holds a read-write mount, and copy_then_sync create puts its storage inside
// it; refused while the session runs (over MCP, and on the command line, where
// the session lives in another process), allowed elsewhere (the control) and
// once the session has ended, after which the mount itself is refused
// read-write. Storage in or around the state directory is refused too.
func TestWorkspaceStorageOutOfReach(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src, proj := t.TempDir(), filepath.Join(t.TempDir(), "proj")
	writeFile(t, filepath.Join(src, "Makefile"), "all:\n")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	rw := []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}}
	o := s.startSession(map[string]any{"command": []string{"sleep", "60"}, "mounts": rw, "timeoutMs": 60000, "yieldMs": 0})
	create := func(storage string) (wsOut, bool) {
		return s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": storage, "copyMode": "auto"})
	}
	wantRefused := func(what, storage, want string) {
		t.Helper()
		res := s.callRaw("copy_then_sync", map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": storage, "copyMode": "auto"})
		if msg := errorOf(res); !res.IsError || !strings.Contains(msg, want) {
			t.Errorf("%s: want refused with %q, got isError=%v %q", what, want, res.IsError, msg)
		}
	}
	wantRefused("storage inside a running session's rw mount", filepath.Join(proj, "ws"), "a running call or session")
	wantRefused("storage around a running session's rw mount", filepath.Dir(proj), "a running call or session")
	wantRefused("storage inside the state directory", filepath.Join(s.state, "ws"), "state directory")
	wantRefused("storage around the state directory", filepath.Dir(s.state), "state directory")
	if _, err := os.Stat(filepath.Join(proj, "ws")); err == nil {
		t.Errorf("a refused create left its storage directory behind")
	}
	if c, isErr := create(t.TempDir()); isErr || !c.OK {
		t.Fatalf("control: storage outside every mount: %+v", c)
	}
	// Inside another workspace's working tree (which calls write).
	other := t.TempDir()
	c, isErr := create(other)
	if isErr || !c.OK {
		t.Fatalf("control: storage outside every mount: %+v", c)
	}
	wantRefused("storage inside another workspace's working tree", filepath.Join(other, c.WorkspaceID, "work", "x"), "the storage of other workspaces")
	if c, isErr := create(other); isErr || !c.OK {
		t.Errorf("control: two workspaces in one storage directory: %+v", c)
	}

	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	c, isErr = create(filepath.Join(proj, "ws"))
	if isErr || !c.OK {
		t.Fatalf("storage in the directory once no call holds it: %+v", c)
	}
	// Now the storage is there, the directory that holds it cannot be mounted
	// read-write (read-only stays possible).
	e, isErr := s.exec(map[string]any{"command": []string{"true"}, "mounts": rw})
	if !isErr && e.code() == 0 {
		t.Errorf("a rw mount holding a workspace's storage ran: %+v", e)
	}
	ro := []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "ro"}}
	if e, _ := s.exec(map[string]any{"command": []string{"true"}, "mounts": ro}); e.code() != 0 {
		t.Errorf("a ro mount holding a workspace's storage: %+v", e)
	}
}

// TestCLIWorkspaceStorageOutOfReach: the reproducer on the command line, where
// the session runs in the session server and `ws create` in another process.
func TestCLIWorkspaceStorageOutOfReach(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.sessions = true
	src, proj := filepath.Join(h.dir, "src"), filepath.Join(h.dir, "proj")
	writeFile(t, filepath.Join(src, "Makefile"), "all:\n")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	id := h.startSession("--yield", "0", "--timeout", "1m", "--mount", proj+":/mnt/proj:rw", "--", "sleep", "60")
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.run("", "session", "close", id)
		}
	})
	h.want(h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(proj, "ws"), src, "/mnt/src"), 125, "", "a running call or session")
	h.want(h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(h.dir, "elsewhere"), src, "/mnt/src"), 0, "", "")
	h.run("", "session", "close", id)
	closed = true
	h.want(h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(proj, "ws"), src, "/mnt/src"), 0, "", "")
	h.want(h.run("", "exec", "--mount", proj+":/mnt/proj:rw", "--", "true"), 125, "", "autobox management storage")
}

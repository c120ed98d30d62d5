//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceSession (issue 22, item 2): a session mounts a workspace and holds it
// for its life while other workspaces, and other calls on the same one, go on; a
// sync or discard of the held workspace is refused at once, naming the session; once
// the session has ended, the same sync works (the positive control).
func TestWorkspaceSession(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "README"), "hello\n")
	create := func() string {
		c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/p", "storagePath": t.TempDir(), "copyMode": "auto"})
		if isErr || !c.OK {
			t.Fatalf("create: %+v", c)
		}
		return c.WorkspaceID
	}
	a, b := create(), create()
	mountA, mountB := []map[string]any{{"workspaceId": a}}, []map[string]any{{"workspaceId": b}}

	o := s.startSession(map[string]any{"command": bash("echo from-session > session.txt; echo ready; exec sleep 60"), "cwd": "/mnt/p", "mounts": mountA, "timeoutMs": 60000, "yieldMs": 5000})
	s.until(o.SessionID, "ready", o.Stdout)

	// Another workspace: a call edits it and it syncs.
	if e, _ := s.exec(map[string]any{"command": bash("echo b > b.txt"), "cwd": "/mnt/p", "mounts": mountB}); e.code() != 0 {
		t.Fatalf("a call on workspace B while a session holds A: %+v", e)
	}
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": b}); isErr || !sy.OK || len(sy.Applied) != 1 {
		t.Fatalf("sync of B while a session holds A: %+v", sy)
	}
	// The same workspace: another call runs beside the session and sees its file.
	if e, _ := s.exec(map[string]any{"command": []string{"cat", "session.txt"}, "cwd": "/mnt/p", "mounts": mountA}); e.code() != 0 || e.Stdout != "from-session\n" {
		t.Fatalf("a call on workspace A beside its session: %+v", e)
	}
	// status works meanwhile; sync and discard are refused, naming the session.
	if st, isErr := s.ws(map[string]any{"action": "status", "workspaceId": a}); isErr || len(st.Changes) != 1 || st.Changes[0].Path != "session.txt" {
		t.Errorf("status of A while its session runs: %+v", st)
	}
	for _, action := range []string{"sync", "discard"} {
		res := s.callRaw("copy_then_sync", map[string]any{"action": action, "workspaceId": a})
		msg := errorOf(res)
		if !res.IsError || !strings.Contains(msg, action+" of workspace "+a+" refused") || !strings.Contains(msg, "session "+o.SessionID) || !strings.Contains(msg, "exec_session close") {
			t.Errorf("%s of A while its session runs: want refused naming %s, got %s", action, o.SessionID, textOf(res))
		}
	}
	if fileExists(filepath.Join(src, "session.txt")) {
		t.Errorf("a refused sync changed the host")
	}

	if c, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"}); !c.Killed {
		t.Fatalf("close: %+v", c)
	}
	if sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": a}); isErr || !sy.OK || len(sy.Applied) != 1 {
		t.Fatalf("sync of A once its session ended: %+v", sy)
	}
	if got := readFile(t, filepath.Join(src, "session.txt")); got != "from-session\n" {
		t.Errorf("session.txt on the host: %q", got)
	}
}

// TestCLIWorkspaceSession: the same on the command line, where the session lives in
// the session server, another process: ws sync is refused (exit 75) naming the
// session, and works once it is closed.
func TestCLIWorkspaceSession(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.sessions = true
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "README"), "hello\n")
	r := h.run("", "ws", "create", "--copy-mode", "auto", "src", "/mnt/p")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("create: %s", r)
	}
	r = h.run("", "exec", "--yield", "2s", "--timeout", "1m", "--workspace", id, "--cwd", "/mnt/p", "--", "sh", "-c", "echo x > x.txt; echo ready; exec sleep 60")
	sid := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(sid, "s-") {
		t.Fatalf("exec --yield --workspace: %s", r)
	}
	h.want(h.run("", "ws", "sync", id), 75, "", "session "+sid)
	h.want(h.run("", "ws", "status", id), 0, "add     x.txt", "")
	if fileExists(filepath.Join(src, "x.txt")) {
		t.Errorf("a refused sync changed the host")
	}
	h.want(h.run("", "session", "close", sid), 0, "", "")
	h.want(h.run("", "ws", "sync", id), 0, "synced 1 of 1 changes", "")
	if got := readFile(t, filepath.Join(src, "x.txt")); got != "x\n" {
		t.Errorf("x.txt on the host: %q", got)
	}
	waitSessionServerGone(t)
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

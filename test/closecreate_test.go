//go:build linux

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCloseThenCreate (issue 32, item 7): once exec_session close (or a call)
// has answered, nothing of it holds its read-write mounts: a workspace
// created at once with its storage inside one is not refused as "mounted
// read-write by a running call or session". Each way runs several times in a
// row, because the old release was late by a moment, most often under load.
func TestCloseThenCreate(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "Makefile"), "all:\n")
	create := func(what, storage string) {
		t.Helper()
		c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": storage, "copyMode": "auto"})
		if isErr || !c.OK {
			t.Fatalf("%s, then create with its storage in the mount: %+v", what, c)
		}
	}
	for i := range 10 {
		proj := filepath.Join(t.TempDir(), fmt.Sprint("proj", i))
		if err := os.Mkdir(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		rw := []map[string]any{{"hostPath": proj, "sandboxPath": "/mnt/proj", "mode": "rw"}}
		if i%2 == 0 {
			o := s.startSession(map[string]any{"command": []string{"sleep", "60"}, "mounts": rw, "timeoutMs": 60000})
			if c, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"}); c.Running {
				t.Fatalf("close answered with the session running: %+v", c)
			}
			create(fmt.Sprintf("session %d closed", i), filepath.Join(proj, "ws"))
		} else {
			if e, _ := s.exec(map[string]any{"command": []string{"true"}, "mounts": rw}); e.code() != 0 {
				t.Fatalf("a call with a rw mount: %+v", e)
			}
			create(fmt.Sprintf("call %d answered", i), filepath.Join(proj, "ws"))
		}
	}
}

// TestCLICloseThenCreate: the same on the command line, where the session
// runs in the session server and ws create in another process, which reads
// the session server's registration: autobox session close answers once it
// is written.
func TestCLICloseThenCreate(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.sessions = true
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "Makefile"), "all:\n")
	for i := range 4 {
		proj := filepath.Join(h.dir, fmt.Sprint("proj", i))
		if err := os.Mkdir(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		id := h.startSession("--yield", "0", "--timeout", "1m", "--mount", proj+":/mnt/proj:rw", "--", "sleep", "60")
		h.run("", "session", "close", id)
		h.want(h.run("", "ws", "create", "--copy-mode", "auto", "--storage", filepath.Join(proj, "ws"), src, "/mnt/src"), 0, "", "")
	}
}

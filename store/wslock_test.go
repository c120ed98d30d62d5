package store

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A session holding workspace A: sync and discard of A are refused at once, naming
// it; status of A, and sync of B, go on; once the session has ended, the same sync of
// A works (the positive control).
func TestWorkspaceLockSession(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	a, b := e.create().WorkspaceID, e.create().WorkspaceID
	writeFile(t, e.work(a), "a.txt", "edited in A")
	writeFile(t, e.work(b), "b.txt", "new in B")
	ctx := context.Background()

	release, err := e.s.Use(ctx, []string{a}, User{Who: "session s-1 (sleep 60)", Session: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"sync":    func() error { _, err := e.s.Sync(ctx, a); return err },
		"discard": func() error { _, err := e.s.Discard(ctx, a); return err },
	} {
		err := op()
		if !errors.Is(err, ErrInUse) || !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "session s-1 (sleep 60)") ||
			!strings.Contains(err.Error(), name+" of workspace "+a+" refused") || !strings.Contains(err.Error(), "exec_session close") {
			t.Errorf("%s of a workspace a session holds: %v", name, err)
		}
	}
	if st := e.status(a); len(st.Changes) != 1 {
		t.Errorf("status while a session holds it: %+v", st)
	}
	if sr := e.mustSync(b); len(sr.Applied) != 1 {
		t.Errorf("sync of another workspace: %+v", sr)
	}
	// Calls on the same workspace go on beside the session.
	r2, err := e.s.Use(ctx, []string{a}, User{Who: "an exec_command call (true)"})
	if err != nil {
		t.Fatalf("a call beside the session: %v", err)
	}
	r2()
	release()
	if sr := e.mustSync(a); len(sr.Applied) != 1 || readFile(t, e.src, "a.txt") != "edited in A" {
		t.Errorf("sync after the session ended: %+v", sr)
	}
}

// A sync waits for a call (bounded by its own time limit) rather than failing, and
// a call waits for a sync in progress; the wait ends with the caller's context.
func TestWorkspaceLockCallWaits(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID
	writeFile(t, e.work(id), "a.txt", "edited")
	release, err := e.s.Use(context.Background(), []string{id}, User{Who: "an execute_js call"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.s.Sync(ctx, id); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for the calls that use workspace") {
		t.Fatalf("sync under a call, with a short context: %v", err)
	}
	done := make(chan error)
	go func() { _, err := e.s.Sync(context.Background(), id); done <- err }()
	time.Sleep(20 * time.Millisecond) // let it wait; the result does not depend on it
	release()
	if err := <-done; err != nil {
		t.Fatalf("sync once the call ended: %v", err)
	}
	if readFile(t, e.src, "a.txt") != "edited" {
		t.Error("sync did not apply")
	}
	// A workspace discarded before its user got the lock is not found.
	r, err := e.s.Use(context.Background(), []string{id}, User{Who: "x"})
	if err != nil {
		t.Fatal(err)
	}
	r()
	if _, err := e.s.Discard(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Use(context.Background(), []string{id}, User{Who: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("use of a discarded workspace: %v", err)
	}
}

// Across processes: another process's session on A makes sync of A fail with its
// name; B syncs meanwhile; once that process is gone (killed), A syncs.
func TestWorkspaceLockAcrossProcesses(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	a, b := e.create().WorkspaceID, e.create().WorkspaceID
	writeFile(t, e.work(a), "a.txt", "edited in A")
	writeFile(t, e.work(b), "b.txt", "new in B")
	cmd, out, _ := child(t, "use", e.state, "WORKSPACE_ID="+a)
	if line, err := out.ReadString('\n'); err != nil || line != "using\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err := e.s.Sync(context.Background(), a)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "session s-child (sleep 60)") || !strings.Contains(err.Error(), "(in process ") {
		t.Errorf("sync of a workspace another process's session holds: %v", err)
	}
	if sr := e.mustSync(b); len(sr.Applied) != 1 {
		t.Errorf("sync of another workspace: %+v", sr)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if sr := e.mustSync(a); len(sr.Applied) != 1 {
		t.Errorf("sync once the other process is gone: %+v", sr)
	}
}

package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// A second process holding the lock makes every operation fail at once with the seed's
// busy text; once that process is gone (even killed) the same operation succeeds.
func TestLockBusyAcrossProcesses(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.src, "a.txt", "a")
	id := e.create().WorkspaceID

	cmd, out, _ := child(t, "lock", e.state)
	if line, err := out.ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	lockPath := filepath.Join(e.state, "operation.lock")
	wantText := "workspace lock: " + lockPath + " is held. Another autobox operation may be busy; retry when it finishes."
	ops := map[string]func() error{
		"create": func() error {
			_, err := e.s.Create(context.Background(), CreateRequest{HostPath: e.src, SandboxPath: "/mnt/p", StoragePath: e.storage, CopyMode: e.mode})
			return err
		},
		"status":  func() error { _, err := e.s.Status(context.Background(), id); return err },
		"sync":    func() error { _, err := e.s.Sync(context.Background(), id); return err },
		"list":    func() error { _, err := e.s.List(context.Background()); return err },
		"discard": func() error { _, err := e.s.Discard(context.Background(), id); return err },
		"lock": func() error {
			unlock, err := e.s.Lock(context.Background())
			if err == nil {
				unlock()
			}
			return err
		},
	}
	for name, op := range ops {
		if err := op(); !errors.Is(err, ErrBusy) || err.Error() != wantText {
			t.Errorf("%s while another process holds the lock: %v; want %q", name, err, wantText)
		}
	}
	// Lookup is lock-free so an execution holding the lock can resolve its mounts.
	if _, err := e.s.Lookup(id); err != nil {
		t.Errorf("lookup: %v", err)
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !exists(lockPath) {
		t.Fatal("lock file vanished; the test needs it on disk to show it does not mean held")
	}
	if _, err := e.s.Status(context.Background(), id); err != nil {
		t.Fatalf("status after the holder died: %v", err)
	}
}

// Within a process operations wait for each other instead of failing; the wait ends
// with the caller's context.
func TestLockWaitsWithinProcess(t *testing.T) {
	e := newEnv(t)
	unlock, err := e.s.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := e.s.List(ctx); done <- err }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "waiting for the workspace lock") {
		t.Fatalf("waiting list: %v; want context.Canceled", err)
	}
	go func() { _, err := e.s.List(context.Background()); done <- err }()
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("list after unlock: %v", err)
	}
}

// unlockClose ends a flock at once even while a child holds a copy of its
// descriptor (as a child being forked does until its exec closes it): another
// open of the file takes the lock right after. The control: closing alone
// leaves it held for as long as the child keeps its copy.
func TestUnlockCloseWhileAChildHoldsACopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	hold := func() (int, *exec.Cmd) {
		t.Helper()
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		dup, err := unix.Dup(fd)
		if err != nil {
			t.Fatal(err)
		}
		// Closed through its *os.File, whose finalizer would otherwise close
		// the number again later, when another test may hold it.
		copied := os.NewFile(uintptr(dup), "copy")
		defer copied.Close()
		child := exec.Command("sleep", "30")
		child.ExtraFiles = []*os.File{copied}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { child.Process.Kill(); child.Wait() })
		return fd, child
	}
	free := func() bool {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
	}
	fd, child := hold()
	unix.Close(fd)
	if free() {
		t.Fatal("control: the lock was free after a plain close while the child held a copy; the test shows nothing here")
	}
	child.Process.Kill()
	child.Wait()
	fd, _ = hold()
	unlockClose(fd)
	if !free() {
		t.Error("after unlockClose the lock is still held by the child's copy")
	}
}

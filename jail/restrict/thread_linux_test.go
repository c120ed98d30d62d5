package restrict

import (
	"errors"
	"os"
	"runtime"
	"testing"
)

func init() { LockMainThread() }

// onMain is NotMainThread asked on the main thread, which TestMain runs on.
var onMain error

func TestMain(m *testing.M) {
	onMain = NotMainThread()
	os.Exit(m.Run())
}

// TestNotMainThread: the main thread, locked in init, is refused; another
// locked thread (the positive control) may be restricted.
func TestNotMainThread(t *testing.T) {
	if !MainThreadLocked() {
		t.Fatal("LockMainThread in init did not lock the main thread")
	}
	if !errors.Is(onMain, ErrMainThread) {
		t.Errorf("NotMainThread on the main thread = %v, want ErrMainThread", onMain)
	}
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- NotMainThread()
	}()
	if err := <-done; err != nil {
		t.Errorf("NotMainThread on another thread = %v, want nil", err)
	}
}

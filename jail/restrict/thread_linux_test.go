package restrict

import (
	"errors"
	"os"
	"runtime"
	"testing"
)

func init() { LockMainThread() }

// onMain and offMain are NotMainThread and OffMainThread asked on the main
// thread, which TestMain runs on.
var onMain, offMain error

func TestMain(m *testing.M) {
	onMain, offMain = NotMainThread(), OffMainThread()
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

// TestOffMainThread: on the main thread OffMainThread refuses (whether or not
// it is locked); f given to RunOffMainThread runs off it, and the positive
// control, another locked thread, passes.
func TestOffMainThread(t *testing.T) {
	if !errors.Is(offMain, ErrMainThread) {
		t.Errorf("OffMainThread on the main thread = %v, want ErrMainThread", offMain)
	}
	var err error
	ran := false
	RunOffMainThread(func() { ran, err = true, OffMainThread() })
	if !ran || err != nil {
		t.Errorf("RunOffMainThread: ran %v, OffMainThread = %v; want true, nil", ran, err)
	}
}

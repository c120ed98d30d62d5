package restrict

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
)

// The main thread of a process that restricts threads is never one of them.
// A restricted thread is retired with its goroutine, but Go never ends the
// main thread (it wedges it instead), so a restricted main thread would keep
// its restrictions (a Landlock domain shared with the command, for one) for
// the life of the process. The main goroutine therefore takes the main thread
// for good while the runtime still holds it there, in an init function
// (LockMainThread), before any goroutine can be scheduled on it, and every
// restriction of a launcher's thread checks that it is not on it
// (NotMainThread).

var mainLocked atomic.Bool

// ErrMainThread: a thread restriction was asked for where the main thread is
// not locked away from it.
var ErrMainThread = errors.New("the main thread is not kept out of restriction")

// LockMainThread locks the calling goroutine to the main thread for good. It
// is called from an init function (the runtime runs them on the main
// goroutine, locked to the main thread), by the program that will restrict
// threads: autobox's child roles, and the test binaries that play them.
func LockMainThread() {
	if onMainThread() {
		runtime.LockOSThread()
		mainLocked.Store(true)
	}
}

// MainThreadLocked reports whether LockMainThread locked the main thread.
func MainThreadLocked() bool { return mainLocked.Load() }

// NotMainThread returns an error wrapping ErrMainThread unless the main
// thread was locked by LockMainThread and the caller runs on another one.
func NotMainThread() error {
	switch {
	case !mainLocked.Load():
		return fmt.Errorf("%w: restrict.LockMainThread was not called from an init function", ErrMainThread)
	case onMainThread():
		return fmt.Errorf("%w: this is the main thread", ErrMainThread)
	}
	return nil
}

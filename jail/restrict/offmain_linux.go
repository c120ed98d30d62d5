package restrict

import (
	"fmt"
	"runtime"
)

// A process that does not lock its main thread away (the server, which
// restricts a thread to spawn each JS worker from it) keeps its restrictions
// off the main thread by asking where it runs: Go may schedule any goroutine,
// one that locks its thread included, on the main thread, and a restricted
// main thread is wedged, not retired, when its goroutine exits.

// OffMainThread returns an error wrapping ErrMainThread if the caller runs on
// the main thread, whether or not LockMainThread locked it. A thread
// restriction in such a process checks it first.
func OffMainThread() error {
	if onMainThread() {
		return fmt.Errorf("%w: this is the main thread", ErrMainThread)
	}
	return nil
}

// RunOffMainThread runs f on a goroutine locked for good to a thread that is
// not the main one, and returns once f has: the thread is retired with the
// goroutine, so whatever f restricts of it ends with it. A goroutine that
// finds itself on the main thread unlocks it, untouched, and starts another.
func RunOffMainThread(f func()) {
	done := make(chan struct{})
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked once off the main thread
		if onMainThread() {
			runtime.UnlockOSThread()
			go run()
			return
		}
		defer close(done)
		f()
	}
	go run()
	<-done
}

package supervisor

import (
	"testing"
	"time"
)

// TestCallClockPauses: a paused clock does not fire until its last pause
// ends, then fires; a stopped one never does.
func TestCallClockPauses(t *testing.T) {
	fired := make(chan struct{})
	var k callClock
	resume1 := k.pause() // before start: the clock waits too
	k.start(20*time.Millisecond, func() { close(fired) })
	resume2 := k.pause()
	resume1()
	resume1() // once only
	select {
	case <-fired:
		t.Fatal("fired while paused")
	case <-time.After(100 * time.Millisecond):
	}
	resume2()
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("did not fire after the last pause ended")
	}

	// Stopped, it never runs again, paused and resumed or not.
	var stopped callClock
	stopped.start(time.Hour, func() { t.Error("a stopped clock fired") })
	stopped.stop()
	timer := stopped.timer
	resume := stopped.pause()
	resume()
	if stopped.timer != timer {
		t.Error("a stopped clock was started again")
	}
}

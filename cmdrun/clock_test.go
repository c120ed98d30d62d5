package cmdrun

import (
	"testing"
	"time"
)

// TestClockPauses: a paused clock does not fire until its last pause
// ends, then fires; a stopped one never does.
func TestClockPauses(t *testing.T) {
	fired := make(chan struct{})
	var k Clock
	resume1 := k.Pause() // before start: the clock waits too
	k.Start(20*time.Millisecond, func() { close(fired) })
	resume2 := k.Pause()
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
	var stopped Clock
	stopped.Start(time.Hour, func() { t.Error("a stopped clock fired") })
	stopped.Stop()
	timer := stopped.timer
	resume := stopped.Pause()
	resume()
	if stopped.timer != timer {
		t.Error("a stopped clock was started again")
	}
}

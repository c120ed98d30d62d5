package cmdrun

import (
	"sync"
	"time"
)

// Clock is a command's wall-clock limit (timeoutMs), which its caller may
// pause: the MCP server stops it while the user is asked about a host the
// command wants, as the time the user takes to answer is theirs, not the
// command's. Pauses may overlap (two
// connections asking at once): the clock runs again when the last one ends.
// Safe for concurrent use; the zero value is a clock not started yet.
type Clock struct {
	mu     sync.Mutex
	fire   func()
	timer  *time.Timer
	left   time.Duration // what remains, as of since
	since  time.Time     // when the timer last started
	paused int
	done   bool // fired or stopped: never runs again
}

// Start runs the clock for d, then calls fire, unless paused meanwhile.
func (k *Clock) Start(d time.Duration, fire func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fire, k.left = fire, d
	if k.paused == 0 {
		k.run()
	}
}

func (k *Clock) run() {
	if k.done || k.fire == nil {
		return
	}
	k.since = time.Now()
	fire := k.fire
	k.timer = time.AfterFunc(k.left, func() {
		k.mu.Lock()
		k.done = true
		k.mu.Unlock()
		fire()
	})
}

// Pause stops the clock until the returned func is called (once).
func (k *Clock) Pause() (resume func()) {
	k.mu.Lock()
	k.paused++
	if k.paused == 1 && k.timer != nil && !k.done {
		if k.timer.Stop() {
			k.left -= time.Since(k.since)
		}
		k.timer = nil
	}
	k.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			if k.paused--; k.paused == 0 {
				k.run()
			}
		})
	}
}

// Stop ends the clock: it never fires after Stop returns, unless it fired
// before.
func (k *Clock) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.done = true
	if k.timer != nil {
		k.timer.Stop()
	}
}

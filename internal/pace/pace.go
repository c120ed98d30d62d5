// Package pace decides when autobox's pools replace what a call used up (a JS
// worker, a command launcher, a scratch directory). Starting a replacement is
// milliseconds of CPU: done while the call's result is on its way to the client,
// on a 2-core machine it delayed the answer by ~0.4 ms. So when calls are spaced
// out, as an agent's are, replacements wait AfterCall; calls back to back (batch
// runs, scripts) get them at once, since the next call needs one soon.
package pace

import (
	"sync/atomic"
	"time"
)

const (
	// AfterCall is how long after a spaced-out call its replacements wait.
	AfterCall = 10 * time.Millisecond
	// BurstGap is the least time between two calls for the second to count as
	// spaced out.
	BurstGap = 50 * time.Millisecond
)

// Calls tells calls spaced out from calls back to back. The zero value is not
// ready: use NewCalls. Safe for concurrent use.
type Calls struct {
	epoch time.Time    // last counts from here (the monotonic clock)
	last  atomic.Int64 // when the last call came, in ns since epoch
}

// NewCalls returns a Calls whose first call counts as spaced out.
func NewCalls() *Calls { return &Calls{epoch: time.Now().Add(-BurstGap)} }

// Spaced records a call now and reports whether it came BurstGap or more after
// the one before.
func (c *Calls) Spaced() bool {
	now := int64(time.Since(c.epoch))
	return now-c.last.Swap(now) >= int64(BurstGap)
}

//go:build linux

package cmdrun

import (
	"errors"
	"sync"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

// A command that reaches the runner as (or after) the server closes is refused
// and makes no launcher pool that nobody would close; before close, the same
// command gets its pool.
func TestJailRunnerClosedRefuses(t *testing.T) {
	r := NewRunner("/nonexistent/autobox", true, 2).(*jailRunner) // no launcher starts
	c := &policy.Command{Unsafe: true}
	pool, err := r.ready(c)
	if err != nil || pool == nil {
		t.Fatalf("before close: pool %v, %v", pool, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = r.ready(c) })
	}
	r.Close()
	wg.Wait()
	if pool, err := r.ready(c); !errors.Is(err, ErrClosed) || pool != nil {
		t.Fatalf("after close: pool %v, %v", pool, err)
	}
	if r.pool == nil {
		t.Fatal("the pool made before close is gone from the runner")
	}
}

package jspool

import (
	"context"
	"testing"
	"time"
)

// TestCallWaitsForAStartingWorker: a call that finds no worker ready while the
// pool's replacement is starting takes that one, rather than starting one of
// its own beside it; the positive control, a call that finds none ready and
// none starting, starts its own. Either way the call runs.
func TestCallWaitsForAStartingWorker(t *testing.T) {
	s := newTestPool(t, Options{Size: 2})
	for deadline := time.Now().Add(20 * time.Second); len(s.ready) < s.size; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers ready after 20 s", len(s.ready), s.size)
		}
	}
	ctx := context.Background()
	starts := func() (starts, pending int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.starts, s.pending
	}
	a, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// None ready, none starting: the call starts its own.
	before, pending := starts()
	if pending != 0 {
		t.Fatalf("%d workers starting with both taken and no call done", pending)
	}
	c, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := starts(); n != before+1 {
		t.Errorf("a call with no worker ready or starting: %d starts, want 1", n-before)
	}
	// a's call is over: the pool's replacements start, and the next call
	// takes one of them.
	before, _ = starts()
	s.done(a)
	if _, pending = starts(); pending < 1 {
		t.Fatal("no replacement starting after a call")
	}
	d, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Counted once both replacements are done: on a loaded machine the
	// second may not have begun its start when the call took the first.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, p := starts(); p == 0 || time.Now().After(deadline) {
			break
		}
	}
	if n, _ := starts(); n != before+pending {
		t.Errorf("a call while %d replacements were starting: %d starts, want %d (theirs)", pending, n-before, pending)
	}
	for _, w := range []*jsWorker{b, c, d} {
		s.done(w)
	}
	if out := runCode(t, s, "6 * 7"); !out.OK || string(out.Result) != "42" {
		t.Errorf("a call after: %+v", out)
	}
}

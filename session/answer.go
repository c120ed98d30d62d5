// How a call's answer waits (Wait): for output to settle, for a line to match,
// for the end of a command that failed at once (endGrace), or for the wait to
// run out, and what the answer then carries.

package session

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// Wait is how long, and for what, an answer waits.
type Wait struct {
	// For is the longest wait.
	For time.Duration
	// Full waits all of For for more output, rather than answering once
	// output has come and paused (see settle): a poll that watches a long job
	// gets what came in that time. The command's end, a full answer and Until
	// end it sooner.
	Full bool
	// Until, if set, ends the wait as soon as a line of the unread output
	// matches it (a line already unread, or one that comes; the line being
	// written, a prompt, counts as it stands).
	Until *regexp.Regexp
}

// answer waits (see Poll) and answers; a final answer removes the session.
func (s *Session[E]) answer(ctx context.Context, wait Wait) (*Answer[E], error) {
	matched := s.await(ctx, wait)
	if err := ctx.Err(); err != nil {
		// Nobody will read this answer (the call was cancelled): its output
		// stays for the next.
		return nil, fmt.Errorf("session %s: the call was cancelled; its output waits for the next poll: %w", s.id, err)
	}
	s.mu.Lock()
	final := s.ended
	s.answered = true
	a := &Answer[E]{ID: s.id, Running: !final, End: s.end, Elapsed: time.Since(s.started), Matched: matched}
	if final {
		a.Elapsed = s.endedAt.Sub(s.started) // the command's life, not the time until this poll
	}
	a.Stdout, a.StdoutDropped = s.stdout.take(final)
	a.Stderr, a.StderrDropped = s.stderr.take(final)
	s.mu.Unlock()
	if final && !s.t.remove(s, "its final result was read already") {
		return nil, fmt.Errorf("%w %q: its final result was read already (by a call at the same time)", ErrUnknown, s.id)
	}
	return a, nil
}

// await returns when the command has ended, an answer is full, output has come
// and been quiet for settle (while an output is open, and unless wait.Full), a
// line matches wait.Until (matched), wait.For has passed or ctx is done.
func (s *Session[E]) await(ctx context.Context, wait Wait) (matched bool) {
	if wait.For <= 0 {
		return false
	}
	var lw *lineWatch
	if wait.Until != nil {
		if lw = s.watch(wait.Until); lw == nil {
			return true // a line unread already matches
		}
		defer s.unwatch(lw)
		defer func() {
			s.mu.Lock()
			matched = lw.hit
			s.mu.Unlock()
		}()
	}
	timeout := time.NewTimer(wait.For)
	defer timeout.Stop()
	var quiet, grace *time.Timer
	var quietC, graceC <-chan time.Time
	defer func() {
		if quiet != nil {
			quiet.Stop()
		}
		if grace != nil {
			grace.Stop()
		}
	}()
	for {
		s.mu.Lock()
		done := s.ended || s.stdout.full() || s.stderr.full() || lw != nil && lw.hit
		// Once every output is closed, no process of the tree is left to
		// write: its end comes next, and is waited for rather than the pause.
		// A full wait, or one for a line, does not answer at a pause.
		some := (s.stdout.pending() || s.stderr.pending()) && !s.drained && !wait.Full && lw == nil
		drained, first := s.drained, !s.answered
		changed := s.changed
		s.mu.Unlock()
		if done {
			return
		}
		if drained && grace != nil {
			graceC = nil // the end is near: wait for it (up to wait)
		}
		if some {
			if quiet == nil {
				quiet = time.NewTimer(settle)
				quietC = quiet.C
			} else {
				quiet.Reset(settle)
			}
		}
		select {
		case <-changed:
		case <-quietC:
			if !first {
				return
			}
			// The first answer: a command that failed at once is about to
			// end; give it endGrace to show it.
			quietC = nil
			grace = time.NewTimer(endGrace)
			graceC = grace.C
		case <-graceC:
			return
		case <-timeout.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

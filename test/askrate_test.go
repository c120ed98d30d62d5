//go:build linux

package test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAskBoundedPerServer (issue 35 item 6): a model that calls beyond the
// ceiling in a loop does not have the user asked every call: the server puts
// at most --max-questions (default 6) questions to the user in any minute,
// all calls and their commands together; the rest are refused unasked, saying
// so. Positive control: the first six are asked. (Calls made within a minute:
// on a machine so slow that they are not, the bound is not reached, and the
// test says so rather than fail.)
func TestAskBoundedPerServer(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "no"}
	s := startAsking(t, u, "--policy", f.policy)
	start := time.Now()
	for i := 0; i < 8; i++ {
		name := fmt.Sprint("c", i)
		if i < 6 {
			f.wantRefused(t, s, name, "the user answered no")
		} else {
			f.wantRefused(t, s, name, "this server already asked 6 questions in the last minute, the most it asks (autobox serve --max-questions)")
		}
	}
	if time.Since(start) > 55*time.Second {
		t.Skip("eight calls took longer than a minute here: the bound per minute was not reached")
	}
	if u.count() != 6 {
		t.Errorf("asked %d times, want 6", u.count())
	}
}

// TestAskBoundShared: the bound holds the questions about hosts a running
// command wants too: with --max-questions 1, a question about a call's
// arguments leaves none for its command.
func TestAskBoundShared(t *testing.T) {
	f := newReachFixture(t, `{"limits": {"timeoutMs": 10000}}`)
	u := &asked{answer: "once"}
	s := f.start(t, u, "--max-questions", "1")
	start := time.Now()
	// A question about the arguments (timeoutMs past the ceiling), answered once.
	o := f.curl(t, s, `curl -sS "$OTHER"`, map[string]any{"timeoutMs": 20000})
	if u.count() != 1 || !strings.Contains(u.last().Message, "timeoutMs 20000") {
		t.Fatalf("asked %d times: %+v", u.count(), o)
	}
	if r := o.denied("127.0.0.1", atoi(f.otherPort)); !strings.Contains(r, "already asked 1 question in the last minute") {
		t.Errorf("the command's host: %q (%+v)", r, o)
	}
	if time.Since(start) > 55*time.Second {
		t.Skip("the call took longer than a minute here: the bound per minute was not reached")
	}
	if u.count() != 1 {
		t.Errorf("asked %d times, want 1", u.count())
	}
	// Positive control: within the ceiling and the list, nobody is asked.
	if o := f.curl(t, s, `curl -sS "$LISTED"`, map[string]any{"timeoutMs": 5000}); o.Stdout != "listed" {
		t.Errorf("listed: %+v", o)
	}
}

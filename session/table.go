// The table of one server's sessions: places reserved and given back, the
// calls that name a session (poll, write, signal, close), listing, and ending
// them all.

package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Table holds the sessions of one server.
type Table[E any] struct {
	opts Options

	mu       sync.Mutex
	open     map[string]*Session[E]
	reserved int
	gone     map[string]string // recently ended ids, with why they are gone
	goneIDs  []string          // gone's keys, oldest first
	closed   bool
}

// NewTable makes a table; opts may be nil.
func NewTable[E any](opts *Options) *Table[E] {
	t := &Table[E]{open: map[string]*Session[E]{}, gone: map[string]string{}}
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.Max <= 0 {
		t.opts.Max = DefaultMax
	}
	if t.opts.Idle <= 0 {
		t.opts.Idle = DefaultIdle
	}
	return t
}

// Max is how many sessions may be open at once.
func (t *Table[E]) Max() int { return t.opts.Max }

// Idle is how long a session may go without a call before it is ended.
func (t *Table[E]) Idle() time.Duration { return t.opts.Idle }

// Reservation is a place in a table for a session about to start.
type Reservation[E any] struct {
	t    *Table[E]
	id   string
	once sync.Once
}

// ID is the id the session will have once opened.
func (r *Reservation[E]) ID() string { return r.id }

// Reserve takes a place for a session, before its command is started, or says
// why there is none: the table is full (the error names the open sessions) or
// closed. Call Open or Cancel on it.
func (t *Table[E]) Reserve() (*Reservation[E], error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	if n := t.runningLocked() + t.reserved; n >= t.opts.Max {
		return nil, fmt.Errorf("%w: %d are running, at most %d: %s; end one with exec_session close", ErrFull, n, t.opts.Max, t.describeLocked())
	}
	t.reserved++
	return &Reservation[E]{t: t, id: newID()}, nil
}

// runningLocked counts the open sessions whose command has not ended.
func (t *Table[E]) runningLocked() int {
	n := 0
	for _, s := range t.open {
		if !s.isEnded() {
			n++
		}
	}
	return n
}

// keepEndedLocked drops the oldest unread final results past Max, once a
// session has ended: ended sessions hold no place, but their output is memory.
func (t *Table[E]) keepEndedLocked() {
	var ended []*Session[E]
	for _, s := range t.sortedLocked() {
		if s.isEnded() {
			ended = append(ended, s)
		}
	}
	for len(ended) > t.opts.Max {
		t.removeLocked(ended[0], fmt.Sprintf("its command ended and its final result was dropped unread: at most %d unread results are kept", t.opts.Max))
		ended = ended[1:]
	}
}

// describeLocked lists the open sessions for an error message.
func (t *Table[E]) describeLocked() string {
	var parts []string
	for _, s := range t.sortedLocked() {
		if !s.isEnded() {
			parts = append(parts, fmt.Sprintf("%s (%s, running, %s)", s.id, abbreviate(s.spec.Command, 60), time.Since(s.started).Round(time.Second)))
		}
	}
	if t.reserved > 0 {
		parts = append(parts, fmt.Sprintf("%d starting", t.reserved))
	}
	return strings.Join(parts, ", ")
}

func (t *Table[E]) sortedLocked() []*Session[E] {
	all := make([]*Session[E], 0, len(t.open))
	for _, s := range t.open {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b *Session[E]) int { return a.started.Compare(b.started) })
	return all
}

// Cancel gives the place back: the command did not start.
func (r *Reservation[E]) Cancel() {
	r.once.Do(func() {
		r.t.mu.Lock()
		r.t.reserved--
		r.t.mu.Unlock()
	})
}

// Open makes the reserved place a session of the started command in spec.
// From now on the session reads its outputs and waits for its end. If the
// table was closed meanwhile, the command is ended at once.
func (r *Reservation[E]) Open(spec *Spec[E], started time.Time) *Session[E] {
	t := r.t
	s := &Session[E]{
		t: t, id: r.id, spec: spec, started: started, lastCall: time.Now(),
		stdout:  newStream("stdout", KeptStdout, AnswerStdout),
		changed: make(chan struct{}), done: make(chan struct{}),
	}
	if spec.Stderr != nil {
		s.stderr = newStream("stderr", KeptStderr, AnswerStderr)
	}
	var closed bool
	r.once.Do(func() {
		t.mu.Lock()
		t.reserved--
		closed = t.closed
		t.open[s.id] = s
		s.idle = time.AfterFunc(t.opts.Idle, s.idleOut)
		t.mu.Unlock()
	})
	s.run()
	if closed {
		go spec.End("killed: the server is shutting down")
	}
	return s
}

// newID is a random session id: unguessable, so meaningless to another table.
func newID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux or macOS
	}
	return "s-" + hex.EncodeToString(b[:])
}

// get finds an open session and counts the call as one that asked about it,
// until the call calls leave.
func (t *Table[E]) get(id string) (*Session[E], error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.open[id]
	if s == nil {
		if why := t.gone[id]; why != "" {
			return nil, fmt.Errorf("%w %q: %s", ErrUnknown, id, why)
		}
		return nil, fmt.Errorf("%w %q (exec_session list shows the open ones; a session belongs to the server that started it)", ErrUnknown, id)
	}
	s.touch()
	return s, nil
}

// Hold counts a use of a session that is not a call, a connection to one of
// its ports (package portfwd), as a call in progress until release: the
// session does not idle out meanwhile, and its idle time counts from the
// release. An id that is not open is ignored (release does nothing).
func (t *Table[E]) Hold(id string) (release func()) {
	s, err := t.get(id)
	if err != nil {
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(s.leave) }
}

// remove forgets s, remembering why; it reports false if s was gone already.
func (t *Table[E]) remove(s *Session[E], why string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(s, why)
}

func (t *Table[E]) removeLocked(s *Session[E], why string) bool {
	if t.open[s.id] != s {
		return false
	}
	delete(t.open, s.id)
	s.idle.Stop()
	t.gone[s.id] = why
	t.goneIDs = append(t.goneIDs, s.id)
	if len(t.goneIDs) > tombstones {
		delete(t.gone, t.goneIDs[0])
		t.goneIDs = t.goneIDs[1:]
	}
	return true
}

// Poll answers with the output since the last answer, waiting as w says for
// some, or for the command's end; the final answer removes the session. A
// cancelled ctx ends the wait with an error, and takes nothing.
func (t *Table[E]) Poll(ctx context.Context, id string, wait Wait) (*Answer[E], error) {
	s, err := t.get(id)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	return s.answer(ctx, wait)
}

// Write sends input to the command's stdin (and then closes it if closeStdin),
// then answers as Poll. It fails (ErrStdin) when the command has ended or
// closed its stdin, or does not take the input within writeWait; closeStdin
// is refused on a terminal, where end of input is Ctrl-D ("\x04").
func (t *Table[E]) Write(ctx context.Context, id string, input []byte, closeStdin bool, wait Wait) (*Answer[E], error) {
	s, err := t.get(id)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	if err := s.write(input, closeStdin); err != nil {
		return nil, err
	}
	return s.answer(ctx, wait)
}

// Signal sends sig ("INT", "TERM" or "KILL") to the command, then answers as
// Poll. A command that has ended is not signalled: the answer is its final one.
func (t *Table[E]) Signal(ctx context.Context, id, sig string, wait Wait) (*Answer[E], error) {
	s, err := t.get(id)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	if !s.isEnded() {
		if err := s.spec.Signal(sig); err != nil {
			return nil, fmt.Errorf("session %s: sending SIG%s: %w", id, sig, err)
		}
	}
	return s.answer(ctx, wait)
}

// Close ends the command, killing its whole tree (unless it has ended), and
// gives its final answer; the session is removed.
func (t *Table[E]) Close(ctx context.Context, id string) (*Answer[E], error) {
	s, err := t.get(id)
	if err != nil {
		return nil, err
	}
	defer s.leave()
	if !s.isEnded() {
		s.spec.End(ClosedNote)
	}
	<-s.done
	return s.answer(ctx, Wait{})
}

// Latest is the last output of a session's command, whether read or not, as
// it came: at most tailBytes of it, nil for none or an unknown id. It does not
// count as a call.
func (t *Table[E]) Latest(id string) []byte {
	t.mu.Lock()
	s := t.open[id]
	t.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.tail...)
}

// tailBytes is how much of the latest output Latest keeps: a line or two.
const tailBytes = 1024

// List describes the open sessions, oldest first.
func (t *Table[E]) List() []Info[E] {
	t.mu.Lock()
	all := t.sortedLocked()
	t.mu.Unlock()
	out := make([]Info[E], 0, len(all))
	for _, s := range all {
		s.mu.Lock()
		out = append(out, Info[E]{ID: s.id, Command: s.spec.Command, Terminal: s.spec.Terminal, Started: s.started, LastCall: s.lastCall, Ended: s.ended, End: s.end})
		s.mu.Unlock()
	}
	return out
}

// CloseAll ends every session (their commands are killed with reason) and refuses
// new ones; it returns when they have ended, or after grace.
func (t *Table[E]) CloseAll(reason string, grace time.Duration) {
	t.mu.Lock()
	t.closed = true
	all := t.sortedLocked()
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		s.idle.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !s.isEnded() {
				s.spec.End(reason)
			}
		}()
	}
	ended := make(chan struct{})
	go func() {
		wg.Wait()
		for _, s := range all {
			<-s.done
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(grace):
	}
}

// abbreviate cuts s to at most n bytes, marking the cut.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 1
	for cut > 0 && cut < len(s) && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

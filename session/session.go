// Package session keeps the commands that outlive the call that started them
// (exec_command with yieldMs): it hands out their output a piece at a time,
// passes them input and signals, ends them, and keeps their final result until
// it has been read once.
//
// A Table belongs to one server. Its sessions are bounded in number (Options.Max),
// in idle time (a session nobody asks about for Options.Idle is ended), and in
// memory: each output keeps at most a fixed amount of unread bytes (the oldest
// are dropped, counted and noted in the next answer), and a command that
// overflows it while nobody reads is slowed down (floodRate), so a flood costs
// neither memory nor much CPU. Session ids are random: an id means nothing to
// another table.
//
// The table does not start or sandbox anything: the caller starts the command
// and gives the table its pipes (or its terminal) and how to wait for, signal
// and end it (Spec). The type parameter E is what the caller makes of the
// command's end, handed back in the final answer.
//
// Every method is safe for concurrent use.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultMax  = 16
	DefaultIdle = 10 * time.Minute
)

// Output bounds. An answer carries at most AnswerStdout bytes of stdout (a
// terminal's output counts as stdout) and AnswerStderr of stderr, as
// exec_command's result does; a session keeps at most KeptStdout and KeptStderr
// unread bytes.
const (
	AnswerStdout = 256 << 10
	AnswerStderr = 64 << 10
	KeptStdout   = 1 << 20
	KeptStderr   = 256 << 10
)

// Timing. settle: an answer that has output goes once the output has been
// quiet this long (a REPL's echo and its result come together; a flood fills
// the answer at once). writeWait: a write that the command does not take in
// this long (it does not read, and the pipe or terminal is full) fails.
// floodRate: how fast output that nobody reads is read (and dropped) once the
// kept bytes are full; the command waits on its writes meanwhile.
const (
	settle    = 3 * time.Millisecond
	writeWait = 2 * time.Second
	floodRate = 16 << 20 // bytes per second
	// drainGrace bounds how long the end waits for the outputs to close after
	// the command's tree is gone (they close with it).
	drainGrace = 2 * time.Second
	// tombstones is how many ended ids are remembered, to say why they are gone.
	tombstones = 256
	// endGrace: a session's first answer, once its output has paused, waits
	// this much longer for the command's end if its outputs close meanwhile,
	// so that a command that failed at once is answered as ended (running:
	// false), not as a session to poll.
	endGrace = 40 * time.Millisecond
)

// ClosedNote is the reason End is given by Close.
const ClosedNote = "killed: session closed"

// Sentinel errors that callers branch on.
var (
	// ErrUnknown: no open session has this id in this table.
	ErrUnknown = errors.New("unknown or ended session")
	// ErrFull: the table has Options.Max sessions open.
	ErrFull = errors.New("too many sessions")
	// ErrStdin: input cannot be delivered (the command ended, closed its stdin,
	// or does not read it).
	ErrStdin = errors.New("cannot write to the session")
	// ErrClosed: the table is closed (the server is shutting down).
	ErrClosed = errors.New("the server is shutting down")
)

// Options configures a Table. Zero values take the defaults.
type Options struct {
	// Max is how many sessions may run at once. An ended session's place is
	// free at once; its final result is kept until read, for at most Idle, and
	// at most Max such results (the oldest are dropped first).
	Max int
	// Idle ends a session that no call has asked about for this long.
	Idle time.Duration
}

// Spec is a started command, as a table needs it. The table owns the files
// from Open on and closes them.
type Spec[E any] struct {
	// Command is what List shows.
	Command string
	// Terminal: Stdin and Stdout are a pseudo-terminal's master (the same file),
	// and Stderr is nil.
	Terminal bool
	// Stdin is where input goes: a pipe's write end, or the terminal.
	Stdin *os.File
	// Stdout and Stderr are the read ends of the command's outputs.
	Stdout, Stderr *os.File
	// Wait blocks until the command and all it started are gone, and returns
	// what the final answer carries. It is called once, by the session.
	Wait func() E
	// Signal sends "INT", "TERM" or "KILL" to the command.
	Signal func(sig string) error
	// End kills the whole tree, giving reason as why (it may block until the
	// tree is gone); Wait then returns.
	End func(reason string)
}

// Answer is what a call about a session gets.
type Answer[E any] struct {
	ID string
	// Running: the command has not ended. Else this is the final answer, and
	// End is how the command ended.
	Running bool
	End     E
	// Stdout and Stderr are the output since the last answer, with notes of
	// what was dropped; StdoutDropped and StderrDropped count those bytes.
	Stdout, Stderr               string
	StdoutDropped, StderrDropped int64
	// Elapsed is the time since the command started.
	Elapsed time.Duration
	// Matched: the answer went because a line matched Wait.Until.
	Matched bool
}

// Info describes an open session (List).
type Info[E any] struct {
	ID       string
	Command  string
	Terminal bool
	Started  time.Time
	LastCall time.Time // the last call that named it (or its start)
	Ended    bool      // its final result waits to be read
	End      E         // when Ended
}

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

// Close ends every session (their commands are killed with reason) and refuses
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

// Session is one command that outlived the call that started it.
type Session[E any] struct {
	t       *Table[E]
	id      string
	spec    *Spec[E]
	started time.Time
	idle    *time.Timer // ends the session after Options.Idle without a call

	writeMu     sync.Mutex // one write at a time, in order
	stdinClosed bool       // guarded by writeMu

	mu       sync.Mutex
	stdout   *stream
	stderr   *stream       // nil on a terminal
	changed  chan struct{} // closed (and replaced) when output arrives or the command ends
	lastCall time.Time
	calls    int  // calls in progress: the session is not idle
	drained  bool // every output is closed: the end is near
	ended    bool // the command and its outputs are done; end is set
	end      E
	endedAt  time.Time     // when the command's tree was gone
	answered bool          // an answer was given (the first one waits endGrace)
	done     chan struct{} // closed when ended is set
	tail     []byte        // the latest output, read or not (Latest)
	watchers []*lineWatch  // answers waiting for a line (Wait.Until)
}

// ID is the session's id.
func (s *Session[E]) ID() string { return s.id }

// touch counts a call that begins (with the table's lock held).
func (s *Session[E]) touch() {
	s.mu.Lock()
	s.lastCall = time.Now()
	s.calls++
	s.mu.Unlock()
	s.idle.Reset(s.t.opts.Idle)
}

// leave counts a call that ends: the idle time counts from then.
func (s *Session[E]) leave() {
	s.mu.Lock()
	s.lastCall = time.Now()
	s.calls--
	s.mu.Unlock()
}

func (s *Session[E]) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// changedLocked wakes whoever waits for output or the end.
func (s *Session[E]) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// run reads the outputs and waits for the end, on goroutines of the session.
func (s *Session[E]) run() {
	var drains sync.WaitGroup
	drains.Add(1)
	go s.drain(s.spec.Stdout, s.stdout, &drains)
	if s.spec.Stderr != nil {
		drains.Add(1)
		go s.drain(s.spec.Stderr, s.stderr, &drains)
	}
	drained := make(chan struct{})
	go func() {
		drains.Wait()
		s.mu.Lock()
		s.drained = true
		s.changedLocked()
		s.mu.Unlock()
		close(drained)
	}()
	go func() {
		end := s.spec.Wait()
		endedAt := time.Now()
		// The tree is gone, so the outputs close once what it wrote has been
		// read; a straggler holding one open is not waited for long.
		select {
		case <-drained:
		case <-time.After(drainGrace):
			s.spec.Stdout.Close()
			if s.spec.Stderr != nil {
				s.spec.Stderr.Close()
			}
			<-drained
		}
		s.spec.Stdout.Close()
		if s.spec.Stderr != nil {
			s.spec.Stderr.Close()
		}
		if !s.spec.Terminal {
			s.writeMu.Lock() // not under a write in progress
			s.spec.Stdin.Close()
			s.stdinClosed = true
			s.writeMu.Unlock()
		}
		s.t.mu.Lock() // the table's lock first, as everywhere
		s.mu.Lock()
		s.ended, s.end, s.endedAt = true, end, endedAt
		s.changedLocked()
		s.mu.Unlock()
		s.t.keepEndedLocked()
		s.t.mu.Unlock()
		close(s.done)
	}()
}

// drain reads one output into its stream until it closes (a terminal's master
// reads EIO once its slave is closed everywhere: that is its end too).
func (s *Session[E]) drain(f *os.File, st *stream, done *sync.WaitGroup) {
	defer done.Done()
	chunk := make([]byte, 32<<10)
	for {
		n, err := f.Read(chunk)
		if n > 0 {
			s.mu.Lock()
			dropped := st.write(chunk[:n])
			s.tail = AppendTail(s.tail, chunk[:n], tailBytes)
			for _, w := range s.watchers {
				w.feed(st, chunk[:n])
			}
			s.changedLocked()
			s.mu.Unlock()
			if dropped > 0 {
				// Nobody reads: take the flood at floodRate only. The command
				// waits in its writes meanwhile; what it writes is dropped all
				// the same, but it is slowed down, not stopped.
				time.Sleep(time.Duration(dropped) * time.Second / floodRate)
			}
		}
		if err != nil {
			return
		}
	}
}

// idleOut ends a session that no call has asked about for the idle limit.
func (s *Session[E]) idleOut() {
	s.mu.Lock()
	quiet := time.Since(s.lastCall)
	ended := s.ended
	busy := s.calls > 0
	s.mu.Unlock()
	switch {
	case busy: // a long poll, say
		s.idle.Reset(s.t.opts.Idle)
		return
	case quiet < s.t.opts.Idle:
		s.idle.Reset(s.t.opts.Idle - quiet) // a call came meanwhile
		return
	}
	why := fmt.Sprintf("it was ended after %v without a call (the server's idle limit)", s.t.opts.Idle)
	if !ended {
		s.spec.End(fmt.Sprintf("killed: session idle for %v", s.t.opts.Idle))
		<-s.done
	} else {
		why = fmt.Sprintf("its final result went unread for %v (the server's idle limit) and was dropped", s.t.opts.Idle)
	}
	s.t.remove(s, why)
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

// write delivers input, then closes stdin if asked.
func (s *Session[E]) write(input []byte, closeStdin bool) error {
	if closeStdin && s.spec.Terminal {
		return fmt.Errorf("%w %s: a terminal's input is not closed: send \\u0004 (Ctrl-D) for end of input", ErrStdin, s.id)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.isEnded() {
		return fmt.Errorf("%w %s: the command has ended and its stdin is closed; poll the session for its result", ErrStdin, s.id)
	}
	if s.stdinClosed {
		return fmt.Errorf("%w %s: its stdin was closed (closeStdin)", ErrStdin, s.id)
	}
	if len(input) > 0 {
		_ = s.spec.Stdin.SetWriteDeadline(time.Now().Add(writeWait))
		n, err := s.spec.Stdin.Write(input)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("%w %s: the command did not read its input: %d of %d bytes were taken in %v", ErrStdin, s.id, n, len(input), writeWait)
		case err != nil && s.isEnded():
			return fmt.Errorf("%w %s: the command has ended and its stdin is closed; poll the session for its result", ErrStdin, s.id)
		case err != nil:
			return fmt.Errorf("%w %s: the command closed its stdin (%d of %d bytes were taken): %v", ErrStdin, s.id, n, len(input), errors.Unwrap(err))
		}
	}
	if closeStdin {
		s.stdinClosed = true
		if err := s.spec.Stdin.Close(); err != nil {
			return fmt.Errorf("%w %s: closing its stdin: %v", ErrStdin, s.id, err)
		}
	}
	return nil
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

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
	"errors"
	"fmt"
	"os"
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

package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestStreamKeepsTheNewest(t *testing.T) {
	s := newStream("stdout", 10, 4)
	if d := s.write([]byte("abcdef")); d != 0 {
		t.Fatalf("dropped %d", d)
	}
	if d := s.write([]byte("ghijkl")); d != 2 {
		t.Fatalf("dropped %d, want 2", d)
	}
	text, dropped := s.take(false)
	if want := "[autobox: 2 bytes of stdout dropped here: they were not read in time]\ncdef"; text != want || dropped != 2 {
		t.Errorf("take = %q, %d; want %q, 2", text, dropped, want)
	}
	if text, dropped = s.take(false); text != "ghij" || dropped != 0 {
		t.Errorf("take = %q, %d", text, dropped)
	}
	// More than kept in one write.
	s.write([]byte(strings.Repeat("x", 25)))
	if _, dropped = s.take(false); dropped != 2+15 {
		t.Errorf("dropped %d, want the 2 unread and 15 of the write", dropped)
	}
}

func TestStreamFinalDropsTheRest(t *testing.T) {
	s := newStream("stderr", 100, 4)
	s.write([]byte("0123456789"))
	text, dropped := s.take(true)
	if want := "0123\n[autobox: stderr truncated: 6 bytes more were dropped]"; text != want || dropped != 6 {
		t.Errorf("take = %q, %d; want %q, 6", text, dropped, want)
	}
}

// TestStreamUTF8: answers do not split characters, a drop that cut one drops
// its tail too, and the final answer gives what is left as it is.
func TestStreamUTF8(t *testing.T) {
	s := newStream("stdout", 64, 5)
	s.write([]byte("abc✓d")) // ✓ is 3 bytes: the cap at 5 falls inside it
	text, _ := s.take(false)
	if text != "abc" {
		t.Errorf("take = %q, want the text before the character the cap would cut", text)
	}
	if text, _ = s.take(false); text != "✓d" {
		t.Errorf("take = %q", text)
	}
	s.write([]byte("x\xe2\x9c")) // an incomplete character: it waits
	if text, _ = s.take(false); text != "x" {
		t.Errorf("take = %q", text)
	}
	s.write([]byte("\x93"))
	if text, _ = s.take(false); text != "✓" {
		t.Errorf("take = %q", text)
	}
	s.write([]byte("y\xe2"))
	if text, _ = s.take(true); text != "y\xe2" {
		t.Errorf("final take = %q", text)
	}
	// A drop through the middle of a character drops its tail too.
	d := newStream("stdout", 4, 64)
	d.write([]byte("✓✓")) // keeps the last 4 bytes: the tail of the first ✓, and the second
	text, dropped := d.take(false)
	if dropped != 3 || !strings.HasSuffix(text, "]\n✓") || !utf8.ValidString(text) {
		t.Errorf("take = %q, %d", text, dropped)
	}
}

// fake is a command for a table: its outputs are pipes the test writes.
type fake struct {
	stdinR, stdoutW, stderrW *os.File
	spec                     *Spec[string]
	ended                    chan string
	signals                  chan string
	once                     sync.Once
	how                      chan string // how it ended, for the test
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{ended: make(chan string, 1), signals: make(chan string, 8), how: make(chan string, 1)}
	var stdinW, stdoutR, stderrR *os.File
	var err error
	for _, p := range []struct{ r, w **os.File }{{&f.stdinR, &stdinW}, {&stdoutR, &f.stdoutW}, {&stderrR, &f.stderrW}} {
		if *p.r, *p.w, err = os.Pipe(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { f.end("cleanup"); f.stdinR.Close() })
	f.spec = &Spec[string]{
		Command: "fake", Stdin: stdinW, Stdout: stdoutR, Stderr: stderrR,
		Wait:   func() string { return <-f.ended },
		Signal: func(sig string) error { f.signals <- sig; return nil },
		End:    f.end,
	}
	return f
}

// end is the command ending: its outputs close, Wait returns how.
func (f *fake) end(how string) {
	f.once.Do(func() {
		f.stdoutW.Close()
		f.stderrW.Close()
		f.ended <- how
		f.how <- how
	})
}

func open(t *testing.T, tab *Table[string], f *fake) string {
	t.Helper()
	r, err := tab.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	return r.Open(f.spec, time.Now()).ID()
}

func TestTablePollWriteSignalClose(t *testing.T) {
	tab := NewTable[string](nil)
	ctx := context.Background()
	f := newFake(t)
	id := open(t, tab, f)
	a, err := tab.Poll(ctx, id, Wait{For: 0})
	if err != nil || !a.Running || a.Stdout != "" {
		t.Fatalf("poll = %+v, %v", a, err)
	}
	f.stdoutW.WriteString("one\n")
	f.stderrW.WriteString("warn\n")
	// A poll answers once output has come, of either stream: the other may
	// come in a later answer (which stream the table reads first is the
	// scheduler's choice on a loaded machine).
	var stdout, stderr string
	for i := 0; i < 2 && (stdout == "" || stderr == ""); i++ {
		if a, err = tab.Poll(ctx, id, Wait{For: 10 * time.Second}); err != nil {
			t.Fatalf("poll = %+v, %v", a, err)
		}
		stdout, stderr = stdout+a.Stdout, stderr+a.Stderr
	}
	if stdout != "one\n" || stderr != "warn\n" {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
	// Input arrives.
	if _, err := tab.Write(ctx, id, []byte("in"), false, Wait{For: 0}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := f.stdinR.Read(buf); err != nil || string(buf) != "in" {
		t.Errorf("stdin read %q, %v", buf, err)
	}
	if _, err := tab.Signal(ctx, id, "INT", Wait{For: 0}); err != nil || <-f.signals != "INT" {
		t.Errorf("signal: %v", err)
	}
	// Close ends the command, answers finally, and the id is gone.
	f.stdoutW.WriteString("last")
	a, err = tab.Close(ctx, id)
	if err != nil || a.Running || a.End != ClosedNote || a.Stdout != "last" {
		t.Errorf("close = %+v, %v", a, err)
	}
	if _, err := tab.Poll(ctx, id, Wait{For: 0}); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "read already") {
		t.Errorf("poll after close: %v", err)
	}
	if _, err := tab.Poll(ctx, "s-nothing", Wait{For: 0}); !errors.Is(err, ErrUnknown) || err.Error() == "" {
		t.Errorf("poll of an unknown id: %v", err)
	}
}

func TestTableEndIsReadOnce(t *testing.T) {
	tab := NewTable[string](nil)
	f := newFake(t)
	id := open(t, tab, f)
	f.stdoutW.WriteString("bye\n")
	f.end("exit 0")
	if list := tab.List(); len(list) != 1 {
		t.Errorf("list %+v", list)
	}
	a, err := tab.Poll(context.Background(), id, Wait{For: 10 * time.Second})
	if err != nil || a.Running || a.End != "exit 0" || a.Stdout != "bye\n" {
		t.Fatalf("poll = %+v, %v", a, err)
	}
	if list := tab.List(); len(list) != 0 {
		t.Errorf("list after the final answer: %+v", list)
	}
	// Writing to an ended session is an error, not a hang.
	g := newFake(t)
	id = open(t, tab, g)
	g.end("exit 1")
	waitEnded(t, tab, id)
	if _, err := tab.Write(context.Background(), id, []byte("x"), false, Wait{For: 0}); !errors.Is(err, ErrStdin) || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("write after the end: %v", err)
	}
}

func TestTableStdinNotRead(t *testing.T) {
	tab := NewTable[string](nil)
	f := newFake(t)
	id := open(t, tab, f)
	// Nobody reads: the pipe fills and the write gives up, saying so.
	_, err := tab.Write(context.Background(), id, bytes.Repeat([]byte("x"), 1<<20), false, Wait{For: 0})
	if !errors.Is(err, ErrStdin) || !strings.Contains(err.Error(), "did not read its input") {
		t.Errorf("write to a full pipe: %v", err)
	}
	// The read end closed: EPIPE.
	f.stdinR.Close()
	_, err = tab.Write(context.Background(), id, []byte("x"), false, Wait{For: 0})
	if !errors.Is(err, ErrStdin) || !strings.Contains(err.Error(), "closed its stdin") {
		t.Errorf("write to a closed stdin: %v", err)
	}
	if _, err := tab.Write(context.Background(), id, nil, true, Wait{For: 0}); err != nil {
		t.Errorf("closing stdin: %v", err)
	}
	if _, err := tab.Write(context.Background(), id, []byte("x"), false, Wait{For: 0}); !errors.Is(err, ErrStdin) || !strings.Contains(err.Error(), "closeStdin") {
		t.Errorf("write after closeStdin: %v", err)
	}
}

func TestTableFull(t *testing.T) {
	tab := NewTable[string](&Options{Max: 2})
	a, b := newFake(t), newFake(t)
	ida := open(t, tab, a)
	open(t, tab, b)
	_, err := tab.Reserve()
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), ida) || !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("third: %v", err)
	}
	if _, err := tab.Close(context.Background(), ida); err != nil {
		t.Fatal(err)
	}
	r, err := tab.Reserve()
	if err != nil {
		t.Fatalf("after a close: %v", err)
	}
	r.Cancel()
}

func TestTableIdle(t *testing.T) {
	tab := NewTable[string](&Options{Idle: 50 * time.Millisecond})
	f := newFake(t)
	id := open(t, tab, f)
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tab.mu.Lock()
		_, open := tab.open[id]
		tab.mu.Unlock()
		if !open {
			_, err = tab.Poll(context.Background(), id, Wait{For: 0})
			break
		}
	}
	if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "without a call") {
		t.Errorf("poll after the idle limit: %v", err)
	}
	if how := <-f.how; !strings.Contains(how, "idle") {
		t.Errorf("ended with %q", how)
	}
}

// TestTableBusyIsNotIdle: a call in progress (a long poll) keeps a session
// from its idle end.
func TestTableBusyIsNotIdle(t *testing.T) {
	tab := NewTable[string](&Options{Idle: 50 * time.Millisecond})
	f := newFake(t)
	id := open(t, tab, f)
	// Ended during the poll, the command's end would end the poll too, with
	// its final answer (what happens after the poll is the idle limit's own).
	a, err := tab.Poll(context.Background(), id, Wait{For: 300 * time.Millisecond})
	if err != nil || !a.Running {
		t.Fatalf("a poll longer than the idle limit: %+v, %v", a, err)
	}
}

// TestTableFlood: output nobody reads costs bounded memory, and is slowed down.
func TestTableFlood(t *testing.T) {
	tab := NewTable[string](nil)
	f := newFake(t)
	id := open(t, tab, f)
	// 4 MB, four times what is kept: all but what the pipe holds has been
	// read (and the oldest dropped) when the last write returns.
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	start := time.Now()
	for range 64 {
		f.stdoutW.Write(chunk)
	}
	took := time.Since(start)
	a, err := tab.Poll(context.Background(), id, Wait{For: 0})
	if err != nil {
		t.Fatal(err)
	}
	s := tab.open[id]
	s.mu.Lock()
	kept := len(s.stdout.buf)
	s.mu.Unlock()
	if kept > KeptStdout {
		t.Errorf("kept %d bytes, more than %d", kept, KeptStdout)
	}
	if a.StdoutDropped == 0 || len(a.Stdout) > AnswerStdout+200 || !strings.HasPrefix(a.Stdout, fmt.Sprintf("[autobox: %d bytes of stdout dropped", a.StdoutDropped)) {
		t.Errorf("answer: %d bytes, dropped %d: %.100q", len(a.Stdout), a.StdoutDropped, a.Stdout)
	}
	t.Logf("wrote 4 MB in %v against the flood limit", took)
}

// TestTableCancelledPollTakesNothing: the output a cancelled call would have
// answered with stays for the next one.
func TestTableCancelledPollTakesNothing(t *testing.T) {
	tab := NewTable[string](nil)
	f := newFake(t)
	id := open(t, tab, f)
	f.stdoutW.WriteString("kept")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tab.Poll(ctx, id, Wait{For: time.Second}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled poll: %v", err)
	}
	if a, err := tab.Poll(context.Background(), id, Wait{For: 10 * time.Second}); err != nil || a.Stdout != "kept" {
		t.Errorf("next poll = %+v, %v", a, err)
	}
}

// TestTableEndedFreesPlace: an ended session holds no place, its final result
// is kept (at most Max of them, the oldest dropped first with why), and the
// final answer's Elapsed is the command's life, not the time until the poll.
func TestTableEndedFreesPlace(t *testing.T) {
	tab := NewTable[string](&Options{Max: 2})
	var fakes []*fake
	var ids []string
	opened := time.Now()
	for i := 0; i < 2; i++ {
		fakes = append(fakes, newFake(t))
		ids = append(ids, open(t, tab, fakes[i]))
	}
	if _, err := tab.Reserve(); !errors.Is(err, ErrFull) {
		t.Fatalf("a third while two run: %v", err)
	}
	fakes[0].stdoutW.WriteString("last words\n")
	fakes[0].end("exit 1")
	waitEnded(t, tab, ids[0])
	ranAtMost := time.Since(opened)    // it ended before waitEnded saw it
	time.Sleep(200 * time.Millisecond) // a poll long after the end
	r, err := tab.Reserve()
	if err != nil {
		t.Fatalf("after one ended (unread): %v", err)
	}
	third := newFake(t)
	ids = append(ids, r.Open(third.spec, time.Now()).ID())
	a, err := tab.Poll(context.Background(), ids[0], Wait{For: 0})
	if err != nil || a.Running || a.End != "exit 1" || a.Stdout != "last words\n" {
		t.Fatalf("the ended one's result: %+v, %v", a, err)
	}
	if a.Elapsed > ranAtMost {
		t.Errorf("Elapsed %v includes the wait before the poll (it ran at most %v)", a.Elapsed, ranAtMost)
	}
	// Unread results are bounded: with Max 2, a third ended drops the oldest.
	for _, i := range []int{1, 2} {
		fakes = append(fakes, nil)
		if i == 2 {
			third.end("exit 0")
		} else {
			fakes[1].end("exit 0")
		}
		waitEnded(t, tab, ids[i])
	}
	f := newFake(t)
	id := open(t, tab, f)
	f.end("exit 0")
	waitEnded(t, tab, id)
	if _, err := tab.Poll(context.Background(), ids[1], Wait{For: 0}); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "dropped unread") {
		t.Errorf("the oldest unread result past Max: %v", err)
	}
	if a, err := tab.Poll(context.Background(), id, Wait{For: 0}); err != nil || a.Running {
		t.Errorf("the newest: %+v %v", a, err)
	}
}

// waitEnded waits until List shows the session ended (or gone).
func waitEnded(t *testing.T, tab *Table[string], id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ended := true
		for _, i := range tab.List() {
			if i.ID == id && !i.Ended {
				ended = false
			}
		}
		if ended {
			return
		}
	}
	t.Fatalf("session %s did not end", id)
}

// TestPollWaits: a full wait answers with everything that came until the
// command's end, not with the first burst; a wait for a line answers once a
// line matches: one unread already, one that comes, a prompt being written,
// never a line made of two outputs.
func TestPollWaits(t *testing.T) {
	tab := NewTable[string](nil)
	ctx := context.Background()
	hour := time.Hour

	f := newFake(t)
	id := open(t, tab, f)
	f.stdoutW.Write([]byte("a\n"))
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.stdoutW.Write([]byte("b\n"))
		time.Sleep(20 * time.Millisecond)
		f.end("exited")
	}()
	a, err := tab.Poll(ctx, id, Wait{For: hour, Full: true})
	if err != nil || a.Running || a.Stdout != "a\nb\n" {
		t.Errorf("a full wait: %+v %v; want the final answer with both lines", a, err)
	}

	f = newFake(t)
	id = open(t, tab, f)
	f.stdoutW.Write([]byte("building\nready on :8000\n"))
	if a, err := tab.Poll(ctx, id, Wait{For: hour, Until: regexp.MustCompile(`ready on :\d+`)}); err != nil || !a.Running || !strings.Contains(a.Stdout, "ready on :8000") {
		t.Errorf("a line unread already: %+v %v", a, err)
	}
	go func() {
		f.stdoutW.Write([]byte("step 1\n"))
		time.Sleep(20 * time.Millisecond)
		f.stdoutW.Write([]byte("step 2\r\nPass"))
		time.Sleep(20 * time.Millisecond)
		f.stdoutW.Write([]byte("word: "))
	}()
	if a, err := tab.Poll(ctx, id, Wait{For: hour, Until: regexp.MustCompile(`^Password: $`)}); err != nil || !a.Running || !strings.HasSuffix(a.Stdout, "step 2\r\nPassword: ") {
		t.Errorf("a prompt being written: %+v %v", a, err)
	}
	// A line begun in the unread output and ended by what comes is one line.
	f.stdoutW.Write([]byte("listening"))
	waitUnread(t, tab, id)
	go func() { f.stdoutW.Write([]byte(" on 8000\n")) }()
	if a, err := tab.Poll(ctx, id, Wait{For: hour, Until: regexp.MustCompile(`^listening on \d+$`)}); err != nil || !a.Running || !a.Matched || a.Stdout != "listening on 8000\n" {
		t.Errorf("a line begun unread: %+v %v", a, err)
	}
	// Half a line on each output is no line: the wait goes on to the end.
	f.stdoutW.Write([]byte("rea"))
	f.stderrW.Write([]byte("dy\n"))
	go func() { time.Sleep(50 * time.Millisecond); f.end("exited") }()
	if a, err := tab.Poll(ctx, id, Wait{For: hour, Until: regexp.MustCompile(`^ready$`)}); err != nil || a.Running {
		t.Errorf("a line of two outputs matched: %+v %v", a, err)
	}
}

// waitUnread waits until session id has unread output.
func waitUnread(t *testing.T, tab *Table[string], id string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tab.mu.Lock()
		s := tab.open[id]
		tab.mu.Unlock()
		s.mu.Lock()
		n := s.stdout.n
		s.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatalf("session %s: no unread output", id)
}

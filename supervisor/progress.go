package supervisor

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/session"
)

// Progress while a call runs (issue 30): a client that sent a progress token
// with a tool call gets notifications/progress while exec_command runs, while
// an exec_session poll waits and while execute_js runs, one every
// ProgressEvery from the first on, each with the time so far (progress, in
// seconds), the call's limit where it has one (total), and the latest line of
// output as its message. The command line draws the same on a terminal
// (WithProgress). A call without a reporter pays for nothing of this.

// ProgressEvery is how often a running call reports: often enough for a
// person watching, rare enough to cost nothing next to the call.
const ProgressEvery = time.Second

// Progress is one report of a running call.
type Progress struct {
	Elapsed time.Duration // since the call (or the poll) began
	Total   time.Duration // its limit, 0 for none
	Message string        // the latest line of its output, "" for none yet
}

// ProgressFunc receives a running call's reports, one at a time, never after
// the call has returned.
type ProgressFunc func(Progress)

type progressKey struct{}

// WithProgress has the calls made with ctx report their progress to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, f)
}

func progressOf(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}

// mcpProgress is the reporter of a tool call that carried token: each report
// is a notifications/progress to the client of ss.
func mcpProgress(ss *mcp.ServerSession, token any) ProgressFunc {
	if ss == nil || token == nil {
		return nil
	}
	return func(p Progress) {
		_ = ss.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      p.Elapsed.Round(time.Millisecond).Seconds(),
			Total:         p.Total.Seconds(),
			Message:       p.Message,
		})
	}
}

// reportProgress calls the reporter of ctx, if any, every ProgressEvery with
// the time since start, total and latest(); stop ends the reports and returns
// once none is being made.
func reportProgress(ctx context.Context, start time.Time, total time.Duration, latest func() string) (stop func()) {
	f := progressOf(ctx)
	if f == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				f(Progress{Elapsed: time.Since(start), Total: total, Message: latest()})
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// maxProgressLine bounds a report's message, in characters.
const maxProgressLine = 200

// lastLine is the last line of output in tail that has something to show
// (a progress bar's \r counts as a line's end), as a report shows it: trimmed,
// without control characters or terminal escapes, at most maxProgressLine
// characters.
func lastLine(tail []byte) string {
	s := strings.ToValidUTF8(string(tail), "")
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := len(lines) - 1; i >= 0; i-- {
		if l := shownLine(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// shownLine is l without terminal escapes and control characters, trimmed
// and bounded.
func shownLine(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		c := l[i]
		if c == 0x1b { // ESC [ ... final byte, or ESC and one more
			j := i + 1
			if j < len(l) && l[j] == '[' {
				for j++; j < len(l) && (l[j] < 0x40 || l[j] > 0x7e); j++ {
				}
			}
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(l[i:])
		if !unicode.IsControl(r) && r != '\u2028' && r != '\u2029' {
			b.WriteString(l[i : i+size])
		}
		i += size - 1
	}
	out := strings.TrimSpace(b.String())
	if utf8.RuneCountInString(out) > maxProgressLine {
		r := []rune(out)
		out = string(r[:maxProgressLine-1]) + "…"
	}
	return out
}

// outputTail keeps the last bytes of a command's output, of all its outputs
// together, for the message of a report.
type outputTail struct {
	mu  sync.Mutex
	buf []byte
}

// tailBytes is how much of the output outputTail keeps: a line or two.
const tailBytes = 1024

func (t *outputTail) add(p []byte) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.buf = session.AppendTail(t.buf, p, tailBytes)
	t.mu.Unlock()
}

// line is the last line of what was kept (see lastLine).
func (t *outputTail) line() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastLine(t.buf)
}

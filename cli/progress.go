package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/supervisor"
)

// progress draws a one-line progress bar on a terminal; disabled, every method does
// nothing, so cron and CI logs get only the summary.
type progress struct {
	w       io.Writer
	enabled bool
	total   int // -1 when the input cannot be counted ahead (a pipe)
	last    time.Time
	drawn   bool
}

// redrawEvery keeps the bar from costing more than the calls it reports on.
const redrawEvery = 100 * time.Millisecond

func newProgress(w io.Writer, enabled bool) *progress {
	return &progress{w: w, enabled: enabled, total: -1}
}

// update redraws the bar after done lines, failed of them failed.
func (p *progress) update(done, failed int) {
	if !p.enabled || (time.Since(p.last) < redrawEvery && done != p.total) {
		return
	}
	p.last = time.Now()
	p.drawn = true
	const width = 30
	if p.total > 0 {
		filled := min(width, done*width/p.total)
		fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %d/%d, %d failed", strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, p.total, failed)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%d done, %d failed", done, failed)
}

// finish erases the bar so the summary line stands alone.
func (p *progress) finish() {
	if p.enabled && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// callProgress draws a running call's reports (supervisor.Progress) on a
// terminal, as an MCP client gets them: one line on stderr, redrawn, with the
// time so far and the latest line of output, erased when the call ends.
type callProgress struct {
	w     io.Writer
	cmd   string
	mu    sync.Mutex
	drawn bool
}

// progressLine bounds the drawn line, so that it never wraps on a terminal of
// ordinary width (a wrapped line is not redrawn in place).
const progressLine = 76

// withCallProgress gives ctx a reporter that draws on e's stderr when it is a
// terminal; done erases what was drawn, and must be called once the call has
// returned.
func (e *env) withCallProgress(ctx context.Context, cmd string) (context.Context, func()) {
	draw, done := e.progressDrawer(cmd)
	return supervisor.WithProgress(ctx, draw), done
}

// progressDrawer is the reporter that draws on e's stderr, nil when it is not
// a terminal, and what erases its line.
func (e *env) progressDrawer(cmd string) (supervisor.ProgressFunc, func()) {
	if !isTerminal(e.stderr) {
		return nil, func() {}
	}
	p := &callProgress{w: e.stderr, cmd: cmd}
	return p.report, p.finish
}

func (p *callProgress) report(r supervisor.Progress) {
	line := fmt.Sprintf("autobox %s: %s", p.cmd, r.Elapsed.Round(time.Second))
	if r.Message != "" {
		line += ": " + escapeText(r.Message)
	}
	if rs := []rune(line); len(rs) > progressLine {
		line = string(rs[:progressLine-1]) + "…"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drawn = true
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
}

func (p *callProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

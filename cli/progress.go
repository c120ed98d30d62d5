package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
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

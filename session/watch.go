package session

import (
	"bytes"
	"regexp"
)

// Waiting for a line (Wait.Until): an answer that waits for a line that
// matches checks the unread output once, then each piece of output as it
// comes, line by line; the line being written (a prompt without its newline)
// is checked as it stands. A line is checked without its \r\n or \n; a line
// longer than maxWatchedLine is checked by its last maxWatchedLine bytes.

// maxWatchedLine bounds the line a watch keeps while it is being written.
const maxWatchedLine = 4096

// lineWatch is one answer's wait for a line matching re.
type lineWatch struct {
	re       *regexp.Regexp
	partials map[*stream][]byte // the line being written on each output, so far
	hit      bool
}

func newLineWatch(re *regexp.Regexp) *lineWatch {
	return &lineWatch{re: re, partials: map[*stream][]byte{}}
}

// feed checks the lines that p, output of st, completes, and the line it
// leaves being written. Called with the session's lock held.
func (w *lineWatch) feed(st *stream, p []byte) {
	if w.hit {
		return
	}
	partial := w.partials[st]
	defer func() { w.partials[st] = partial }()
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(append(partial, p[:i]...), []byte("\r"))
		partial = partial[:0]
		p = p[i+1:]
		if w.re.Match(line) {
			w.hit = true
			return
		}
	}
	partial = AppendTail(partial, p, maxWatchedLine)
	if len(partial) > 0 && w.re.Match(bytes.TrimSuffix(partial, []byte("\r"))) {
		w.hit = true
	}
}

// watch starts a wait for a line matching re, after checking the output not
// read yet: nil when a line of that matches already. The caller unwatches.
func (s *Session[E]) watch(re *regexp.Regexp) *lineWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	// One watch for both: the line each output leaves being written goes on
	// with what comes next on it.
	w := newLineWatch(re)
	for _, st := range []*stream{s.stdout, s.stderr} {
		if st == nil || st.n == 0 {
			continue
		}
		unread := make([]byte, st.n)
		st.copyOut(unread, st.n)
		if w.feed(st, unread); w.hit {
			return nil
		}
	}
	s.watchers = append(s.watchers, w)
	return w
}

// unwatch ends a wait for a line.
func (s *Session[E]) unwatch(w *lineWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.watchers {
		if x == w {
			s.watchers = append(s.watchers[:i], s.watchers[i+1:]...)
			return
		}
	}
}

// AppendTail is tail with p appended, its last max bytes: the latest of a
// stream of output in bounded memory.
func AppendTail(tail, p []byte, max int) []byte {
	if len(p) >= max {
		return append(tail[:0], p[len(p)-max:]...)
	}
	if over := len(tail) + len(p) - max; over > 0 {
		tail = append(tail[:0], tail[over:]...)
	}
	return append(tail, p...)
}

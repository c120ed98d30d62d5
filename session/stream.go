package session

import (
	"fmt"
	"unicode/utf8"
)

// stream is one output of a session's command, as it waits to be read: the most
// recent unread bytes, at most kept of them. Older unread bytes are dropped and
// counted, and the next answer says where and how many. Its methods are called
// with the session's lock held.
type stream struct {
	name   string // "stdout", "stderr"
	kept   int    // unread bytes kept at most
	answer int    // bytes one answer carries at most

	buf      []byte // a ring once it has grown to kept
	start, n int    // the unread bytes: n of them from buf[start], wrapping
	dropped  int64  // unread bytes dropped since the last answer
}

func newStream(name string, kept, answer int) *stream {
	return &stream{name: name, kept: kept, answer: answer}
}

// write appends p, dropping the oldest unread bytes beyond kept, and returns how
// many it dropped.
func (s *stream) write(p []byte) int {
	drop := 0
	if len(p) > s.kept {
		drop = len(p) - s.kept
		p = p[drop:]
	}
	if over := s.n + len(p) - s.kept; over > 0 {
		s.start = (s.start + over) % len(s.buf)
		s.n -= over
		drop += over
	}
	s.dropped += int64(drop)
	s.grow(s.n + len(p))
	end := (s.start + s.n) % len(s.buf)
	c := copy(s.buf[end:], p)
	copy(s.buf, p[c:])
	s.n += len(p)
	return drop
}

// grow makes room for size unread bytes, growing the buffer (and unwrapping the
// ring) by doubling up to kept: an idle session costs little.
func (s *stream) grow(size int) {
	if size <= len(s.buf) {
		return
	}
	c := max(len(s.buf)*2, 4096)
	for c < size {
		c *= 2
	}
	nb := make([]byte, min(c, s.kept))
	s.copyOut(nb, s.n)
	s.buf, s.start = nb, 0
}

// copyOut copies the first k unread bytes to dst.
func (s *stream) copyOut(dst []byte, k int) {
	if k == 0 {
		return
	}
	c := copy(dst[:k], s.buf[s.start:min(s.start+k, len(s.buf))])
	copy(dst[c:k], s.buf)
}

func (s *stream) discard(k int) {
	if k > 0 {
		s.start = (s.start + k) % len(s.buf)
		s.n -= k
	}
}

// full says an answer is ready to go without waiting for more.
func (s *stream) full() bool { return s != nil && s.n >= s.answer }

// pending says there is something to answer with.
func (s *stream) pending() bool { return s != nil && (s.n > 0 || s.dropped > 0) }

// take returns the next answer's text of this stream and the bytes dropped that
// it reports. The text is at most answer bytes of the unread output, not cut
// inside a UTF-8 sequence unless the stream has ended (an incomplete one waits
// for its end). Dropped bytes are noted where they were, in a line of their own;
// a final answer drops, and notes, what is unread beyond it.
func (s *stream) take(final bool) (text string, dropped int64) {
	if s == nil {
		return "", 0
	}
	k := min(s.n, s.answer)
	b := make([]byte, k)
	s.copyOut(b, k)
	if s.dropped > 0 {
		// A drop may have cut a character: its tail is part of the drop.
		skip := 0
		for skip < len(b) && skip < utf8.UTFMax-1 && !utf8.RuneStart(b[skip]) {
			skip++
		}
		b = b[skip:]
		s.discard(skip)
		s.dropped += int64(skip)
		k -= skip
	}
	if !final || k < s.n {
		b = b[:len(b)-partialRune(b)]
	}
	s.discard(len(b))
	dropped = s.dropped
	var out []byte
	if s.dropped > 0 {
		out = fmt.Appendf(out, "[autobox: %d bytes of %s dropped here: they were not read in time]\n", s.dropped, s.name)
		s.dropped = 0
	}
	out = append(out, b...)
	if final && s.n > 0 {
		dropped += int64(s.n)
		out = fmt.Appendf(out, "\n[autobox: %s truncated: %d bytes more were dropped]", s.name, s.n)
		s.discard(s.n)
	}
	return string(out), dropped
}

// partialRune is the length of an incomplete UTF-8 sequence at the end of b.
func partialRune(b []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

package supervisor

import (
	"fmt"
	"os"
	"time"
	"unicode/utf8"
)

// A one-shot command's output, as its result carries it: each stream kept up to
// its limit, the rest drained and dropped, the text marked where it was cut.

// cappedPipe collects a child's output up to max bytes and drains (and drops) the
// rest, so a flood neither blocks the child nor grows the server's memory.
type cappedPipe struct {
	max       int
	what      string
	r         *os.File
	buf       []byte
	truncated bool
	done      chan struct{}
	tail      *outputTail // nil, or where the latest output is kept too
}

func (c *cappedPipe) open() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the %s pipe: %w", c.what, err)
	}
	c.r = r
	c.done = make(chan struct{})
	go c.drain()
	return w, nil
}

func (c *cappedPipe) drain() {
	defer close(c.done)
	chunk := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(chunk)
		if n > 0 {
			c.tail.add(chunk[:n])
			if room := c.max - len(c.buf); room > 0 {
				if n > room {
					c.buf = append(c.buf, chunk[:room]...)
					c.truncated = true
				} else {
					c.buf = append(c.buf, chunk[:n]...)
				}
			} else {
				c.truncated = true
			}
		}
		if err != nil {
			return
		}
	}
}

// finish waits for the writer side to close (every process of the tree is gone by
// then) and returns the text.
func (c *cappedPipe) finish() (string, bool) {
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
		c.r.Close() // a descendant escaped the kill holding the pipe: do not hang
		<-c.done
	}
	c.r.Close()
	if !c.truncated {
		return string(c.buf), false
	}
	// The cut may split a character; what is kept stays valid UTF-8 if it was.
	return string(dropPartialRune(c.buf)) + fmt.Sprintf("\n[autobox: %s truncated at %d bytes]", c.what, c.max), true
}

// dropPartialRune drops an incomplete UTF-8 sequence at the end of b.
func dropPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// textEncoding says how a command's output reaches the client: JSON strings are
// UTF-8, so bytes that are not become U+FFFD on the way, and the result says so.
func textEncoding(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return "utf-8-lossy"
}

func (c *cappedPipe) abort() {
	c.r.Close()
	<-c.done
}

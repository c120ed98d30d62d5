// Package stdiotest talks to a server of newline-delimited messages (an MCP
// stdio server) over in-memory pipes, for tests: Send writes a line to the
// server's input, Next reads the next line of its output.
package stdiotest

import (
	"bufio"
	"io"
	"testing"
	"time"
)

// Pipes are a server's input and output, seen from its client.
type Pipes struct {
	t   testing.TB
	in  *io.PipeWriter
	out *bufio.Scanner

	// ServerIn and ServerOut are the server's ends: it reads ServerIn and
	// writes ServerOut.
	ServerIn  *io.PipeReader
	ServerOut *io.PipeWriter
	outR      *io.PipeReader
}

// New makes the pipes; the test's cleanup closes the client's ends (Close).
func New(t testing.TB) *Pipes {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 16<<20)
	return &Pipes{t: t, in: inW, out: sc, ServerIn: inR, ServerOut: outW, outR: outR}
}

// Close closes the client's ends: the server reads EOF, and its writes fail.
func (p *Pipes) Close() {
	p.in.Close()
	p.outR.Close()
}

// Send writes line and a newline to the server.
func (p *Pipes) Send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// Next returns the next line the server writes; the test fails if the server
// closes its output, or writes nothing for 30 seconds (a server that stopped
// answering, not a slow one).
func (p *Pipes) Next() string {
	p.t.Helper()
	line := make(chan string, 1)
	go func() {
		if p.out.Scan() {
			line <- p.out.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			p.t.Fatal("the server closed its output")
		}
		return l
	case <-time.After(30 * time.Second):
		p.t.Fatal("no reply within 30s")
	}
	return ""
}

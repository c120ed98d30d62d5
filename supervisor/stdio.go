package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxMessageBytes bounds one inbound JSON-RPC line. Tool arguments are bounded far
// below it (1 MB of code or argv), so a longer line is refused, not buffered.
const MaxMessageBytes = 8 << 20

// StdioTransport is newline-delimited JSON-RPC over a reader and a writer, like the
// SDK's, except that one bad line costs one error reply instead of the session: a
// malformed or over-long line is answered with a JSON-RPC error (id null) and the
// next line is read as usual.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{out: t.Out, incoming: make(chan readResult), closed: make(chan struct{}), pending: map[any]bool{}, answered: make(chan struct{}, 1)}
	go c.readLoop(bufio.NewReaderSize(t.In, 64<<10))
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	writeMu   sync.Mutex
	out       io.Writer
	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once

	pendingMu sync.Mutex
	pending   map[any]bool  // ids of requests read and not yet answered
	answered  chan struct{} // signalled when a response is written
}

// eofGrace is how long requests still running when stdin closes may take to answer
// (a last line without a newline still gets its reply) before the session ends and
// their calls are cancelled.
const eofGrace = 2 * time.Second

func (c *lineConn) readLoop(r *bufio.Reader) {
	for {
		line, tooLong, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			var msg jsonrpc.Message
			var derr error
			if tooLong {
				derr = fmt.Errorf("message of more than %d bytes", MaxMessageBytes)
			} else if msg, derr = jsonrpc.DecodeMessage(line); derr != nil {
				derr = fmt.Errorf("parse error: %v", derr)
			}
			if derr != nil {
				c.writeError(line, tooLong, derr)
			} else {
				if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
					c.pendingMu.Lock()
					c.pending[req.ID.Raw()] = true
					c.pendingMu.Unlock()
				}
				select {
				case c.incoming <- readResult{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.drain()
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// drain waits, at most eofGrace, until every request read so far has been answered.
func (c *lineConn) drain() {
	deadline := time.After(eofGrace)
	for {
		c.pendingMu.Lock()
		n := len(c.pending)
		c.pendingMu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.answered:
		case <-deadline:
			return
		case <-c.closed:
			return
		}
	}
}

// readLine returns the next line without its newline. A line longer than
// MaxMessageBytes is consumed to its end and dropped (tooLong), never held in memory.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxMessageBytes+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), tooLong, err
	}
}

// writeError answers a line that could not be a message. The id is recovered when the
// line is JSON with an id, so the client can match the error to its request.
func (c *lineConn) writeError(line []byte, tooLong bool, err error) {
	code := int64(-32700) // parse error
	id := json.RawMessage("null")
	if tooLong {
		code = -32600 // invalid request
	} else {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &probe) == nil {
			code = -32600
			if len(probe.ID) > 0 {
				id = probe.ID
			}
		}
	}
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": err.Error()},
	})
	c.writeLine(resp)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection; safe for concurrent use.
func (c *lineConn) Write(_ context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	err = c.writeLine(b)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.pendingMu.Lock()
		delete(c.pending, resp.ID.Raw())
		c.pendingMu.Unlock()
		select {
		case c.answered <- struct{}{}:
		default:
		}
	}
	return err
}

// Close implements mcp.Connection.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: stdio has one session.
func (c *lineConn) SessionID() string { return "" }

package mcpstdio

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

// MaxMessageBytes bounds one inbound JSON-RPC line. A server bounds its tool
// arguments far below it, so a longer line is refused, not buffered.
const MaxMessageBytes = 8 << 20

// Transport is newline-delimited JSON-RPC over a reader and a writer, like the
// SDK's, except that one bad line costs one error reply instead of the session: a
// malformed or over-long line is answered with a JSON-RPC error (with the request's id
// where it can be found, else null) and the next line is read as usual.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// Direct, when set, answers plain tools/call requests on the reading
	// goroutine (direct.go); nil passes every request to the SDK.
	Direct Direct
	// Name is how the program names itself on stderr (brokenpipe.go); "" means
	// the base name of os.Args[0].
	Name string

	conn *lineConn // the connection, once made
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	catchSIGPIPE()
	c := &lineConn{out: t.Out, incoming: make(chan readResult), closed: make(chan struct{}), pending: map[any]context.CancelCauseFunc{}, answered: make(chan struct{}, 1), direct: t.Direct, name: t.Name, window: newWindow(MaxInFlight)}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	t.conn = c
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
	lostOnce  sync.Once // brokenpipe.go

	pendingMu sync.Mutex
	pending   map[any]context.CancelCauseFunc // requests read and not yet answered, by id; direct calls have their cancel func
	writing   int                             // answers being written
	answered  chan struct{}                   // signalled when a response is written
	window    window                          // requests in flight (backpressure.go)

	direct Direct
	name   string          // Transport.Name
	ctx    context.Context // parent of direct calls, cancelled when the session ends
	cancel context.CancelCauseFunc
}

// eofGrace bounds how long, after stdin closes, the answers of the calls then in
// flight may take to be written. Those calls are cancelled at once (their trees
// killed, their workers ended): the client has gone, and a runaway call must not
// keep burning CPU for it. What a call answers when cancelled is written, if it
// comes in time.
const eofGrace = 400 * time.Millisecond

func (c *lineConn) readLoop(r *bufio.Reader) {
	for {
		line, over, err := readLine(r)
		if tooLong := over != nil; len(bytes.TrimSpace(line)) > 0 || tooLong {
			var msg jsonrpc.Message
			var derr error
			if tooLong {
				derr = fmt.Errorf("message of more than %d bytes", MaxMessageBytes)
			} else if req, ok := c.plainToolCall(line); ok {
				msg = req
			} else if msg, derr = jsonrpc.DecodeMessage(line); derr != nil {
				derr = fmt.Errorf("parse error: %v", derr)
			}
			req, _ := msg.(*jsonrpc.Request)
			if derr == nil && req != nil && req.ID.IsValid() && !c.window.acquire(c.closed) {
				return
			}
			switch {
			case derr != nil:
				c.writeError(line, over, derr)
			case req != nil && req.ID.IsValid() && !c.track(req.ID, nil):
				// Answered with id null, as the SDK does, so the error is not taken
				// for the answer to the request in progress.
				c.writeErrorResponse(json.RawMessage("null"), -32600, fmt.Sprintf("request id %v is already in use by a request in progress", req.ID.Raw()))
				c.window.release()
			default:
				if req != nil && req.Method == "notifications/cancelled" {
					c.cancelDirect(req)
				}
				if d := c.directCall(req); d != nil {
					// This goroutine answers the call; another takes over reading, so a
					// cancellation or a second call is read while this one runs. The
					// call is cancellable before that reader exists.
					ctx, cancel := context.WithCancelCause(c.ctx)
					c.track(req.ID, cancel)
					go c.readLoop(r)
					c.runDirect(ctx, cancel, req, d)
					return
				}
				select {
				case c.incoming <- readResult{msg: msg}:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			c.cancel(errors.New("the client closed the session"))
			c.drain()
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// track records a request id as pending, with the cancel func of a direct call (nil
// for a request passed to the SDK). It reports false if the id is already pending.
func (c *lineConn) track(id jsonrpc.ID, cancel context.CancelCauseFunc) bool {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	if _, dup := c.pending[id.Raw()]; dup && cancel == nil {
		return false
	}
	c.pending[id.Raw()] = cancel
	return true
}

// drain waits, at most eofGrace, until every request read so far has been answered
// (cancelled calls answer quickly; a request the SDK handles is cancelled when the
// session ends, after drain).
func (c *lineConn) drain() {
	deadline := time.After(eofGrace)
	for {
		c.pendingMu.Lock()
		n := len(c.pending) + c.writing
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

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	if err != nil {
		c.lost(err)
	}
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
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.writeLine(b)
	}
	// The id is free before the client can read the answer (it may reuse the id at
	// once); the answer counts as pending for drain until it is written.
	c.pendingMu.Lock()
	delete(c.pending, resp.ID.Raw())
	c.writing++
	c.pendingMu.Unlock()
	err = c.writeLine(b)
	c.window.release()
	c.pendingMu.Lock()
	c.writing--
	c.pendingMu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
	return err
}

// Close implements mcp.Connection. Direct calls still running are cancelled.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.cancel(errors.New("the session ended"))
	})
	return nil
}

// SessionID implements mcp.Connection: stdio has one session.
func (c *lineConn) SessionID() string { return "" }

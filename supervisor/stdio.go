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
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/internal/exactjson"
)

// MaxMessageBytes bounds one inbound JSON-RPC line. Tool arguments are bounded far
// below it (1 MB of code or argv), so a longer line is refused, not buffered.
const MaxMessageBytes = 8 << 20

// StdioTransport is newline-delimited JSON-RPC over a reader and a writer, like the
// SDK's, except that one bad line costs one error reply instead of the session: a
// malformed or over-long line is answered with a JSON-RPC error (with the request's id
// where it can be found, else null) and the next line is read as usual.
type StdioTransport struct {
	In  io.Reader
	Out io.Writer

	direct *directCalls // set by Server.Serve
	conn   *lineConn    // the connection, once made
}

// directCalls lets the transport answer tools/call requests itself (lineConn.directCall).
type directCalls struct {
	tools   map[string]toolCall
	ready   func() bool               // the session has been initialized by the SDK
	session func() *mcp.ServerSession // the session, for calls that ask the user (ask.go)
	server  *mcp.Implementation       // the serverInfo of 2026-07-28 results
	// serve runs a call as the SDK's handler does (Server.serveCall).
	serve func(ctx context.Context, d *directCall) *mcp.CallToolResult

	answered atomic.Int64 // calls answered on the direct path, for tests
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	catchSIGPIPE()
	c := &lineConn{out: t.Out, incoming: make(chan readResult), closed: make(chan struct{}), pending: map[any]context.CancelCauseFunc{}, answered: make(chan struct{}, 1), direct: t.direct, window: newWindow(MaxInFlight)}
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

	direct *directCalls
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

// directCall returns how to answer a tools/call request the transport can answer
// itself, or nil to pass the request to the SDK.
//
// The SDK hands every request through two fresh goroutines before the tool handler
// runs (half a millisecond on a small VM, more than the call itself); answering on
// the goroutine that read the request skips that. Only plain calls qualify: the
// session is initialized, the tool is ours, the params hold nothing but name,
// arguments and _meta, and _meta is either not the per-request protocol metadata
// of MCP 2026-07-28 or that metadata, well-formed, for exactly that version.
// Anything else goes to the SDK, which answers or refuses it. The answer is what the
// SDK would send: the same call function (addTool), the same result encoding, and
// for 2026-07-28 the same serverInfo annotation.
func (c *lineConn) directCall(req *jsonrpc.Request) *directCall {
	if c.direct == nil || req == nil || req.Method != "tools/call" || !req.ID.IsValid() || !c.direct.ready() {
		return nil
	}
	var params struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
	}
	// Keys exactly as named (a folded or repeated one goes to the SDK, which
	// judges it), so that this path reads a request as the SDK does.
	if exactjson.Decode(req.Params, &params) != nil || params.Name == nil {
		return nil
	}
	d := &directCall{name: *params.Name, call: c.direct.tools[*params.Name], args: params.Arguments, meta: params.Meta}
	if d.call == nil {
		return nil
	}
	if params.Meta != nil {
		var ok bool
		if d.newProtocol, ok = newProtocolMeta(params.Meta); !ok {
			return nil
		}
		d.progressToken = progressToken(params.Meta)
	}
	return d
}

// progressToken is the progress token of a request's _meta (a string or a
// number, kept as written), nil for none.
func progressToken(meta json.RawMessage) any {
	var m struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(meta, &m) != nil || len(m.Token) == 0 || string(m.Token) == "null" {
		return nil
	}
	return m.Token
}

// plainToolCall decodes a line that is a tools/call request of the plainest form:
// one object with exactly the members jsonrpc ("2.0"), id (a number or a string),
// method and params, each once, nested at most maxDepth deep. It gives the request
// DecodeMessage would; ok is false for anything else, which DecodeMessage then
// decodes (and, for what the SDK refuses, refuses). It uses encoding/json, as the
// call's arguments and result do: the SDK decodes with another JSON package, and on
// a machine that has been idle both run cold, so one package instead of two saved
// ~0.06 ms of every call here.
func (c *lineConn) plainToolCall(line []byte) (*jsonrpc.Request, bool) {
	if c.direct == nil || !bytes.Contains(line, []byte(`"tools/call"`)) || tooDeep(line, maxDepth) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	members := make(map[string]json.RawMessage, 4)
	for dec.More() {
		t, err := dec.Token()
		key, isKey := t.(string)
		if err != nil || !isKey || members[key] != nil {
			return nil, false // a repeated member: the SDK judges those
		}
		switch key {
		case "jsonrpc", "id", "method", "params":
		default:
			return nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		members[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') || len(members) != 4 {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // trailing data
	}
	var version, method string
	var id any
	if json.Unmarshal(members["jsonrpc"], &version) != nil || version != "2.0" ||
		json.Unmarshal(members["method"], &method) != nil || method != "tools/call" ||
		json.Unmarshal(members["id"], &id) != nil {
		return nil, false
	}
	rid, err := jsonrpc.MakeID(id)
	if err != nil || !rid.IsValid() {
		return nil, false
	}
	return &jsonrpc.Request{ID: rid, Method: method, Params: members["params"]}, true
}

// maxDepth is the SDK's limit on how deeply a message may nest.
const maxDepth = 1000

// tooDeep reports whether JSON text nests arrays and objects more than limit deep
// (brackets inside strings do not count).
func tooDeep(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, ch := range b {
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case inString:
		case ch == '{' || ch == '[':
			if depth++; depth > limit {
				return true
			}
		case ch == '}' || ch == ']':
			depth--
		}
	}
	return false
}

// directCall is a tools/call request answered by the transport.
type directCall struct {
	name          string
	call          toolCall
	args          json.RawMessage
	meta          json.RawMessage
	newProtocol   bool // the request carries MCP 2026-07-28 per-request metadata
	progressToken any  // the request's _meta.progressToken, nil for none
}

// newProtocol2026 is the MCP version whose per-request metadata the direct path
// knows; requests naming any other version of that form go to the SDK.
const newProtocol2026 = "2026-07-28"

// newProtocolMeta reads a request's _meta: newProtocol when it carries the
// per-request metadata of MCP 2026-07-28 (protocol version, client capabilities,
// optional client info), ok false when it is anything the SDK should judge.
func newProtocolMeta(raw json.RawMessage) (newProtocol, ok bool) {
	var meta map[string]json.RawMessage
	if json.Unmarshal(raw, &meta) != nil || meta == nil {
		return false, false
	}
	v, present := meta[mcp.MetaKeyProtocolVersion]
	if !present {
		return false, true
	}
	var version string
	if json.Unmarshal(v, &version) != nil || version != newProtocol2026 {
		return false, false
	}
	if !isObject(meta[mcp.MetaKeyClientCapabilities]) {
		return false, false
	}
	if ci, present := meta[mcp.MetaKeyClientInfo]; present {
		var impl *mcp.Implementation
		if json.Unmarshal(ci, &impl) != nil || impl == nil {
			return false, false
		}
	}
	return true, true
}

// isObject tells whether raw, part of a message already decoded (so valid JSON), is an
// object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// runDirect answers a direct call (see directCall).
func (c *lineConn) runDirect(ctx context.Context, cancel context.CancelCauseFunc, req *jsonrpc.Request, d *directCall) {
	defer cancel(nil)
	c.direct.answered.Add(1)
	res := c.direct.serve(WithProgress(ctx, mcpProgress(c.direct.session(), d.progressToken)), d)
	if d.newProtocol {
		res.SetMeta(map[string]any{mcp.MetaKeyServerInfo: c.direct.server})
	}
	resp := &jsonrpc.Response{ID: req.ID}
	if raw, err := json.Marshal(res); err != nil {
		resp.Error = fmt.Errorf("encoding the result: %w", err)
	} else {
		resp.Result = withResultType(raw, res, multiRoundTrip(c.direct.session()))
	}
	_ = c.Write(ctx, resp)
}

// cancelDirect handles notifications/cancelled for a direct call. The notification
// is passed on to the SDK as well, which ignores ids it does not know.
func (c *lineConn) cancelDirect(req *jsonrpc.Request) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	var v any // a number (float64) or a string, what MakeID takes
	if json.Unmarshal(p.RequestID, &v) != nil {
		return
	}
	id, err := jsonrpc.MakeID(v)
	if err != nil || !id.IsValid() {
		return
	}
	c.pendingMu.Lock()
	cancel := c.pending[id.Raw()]
	c.pendingMu.Unlock()
	if cancel != nil {
		cancel(fmt.Errorf("the client cancelled the request: %s", p.Reason))
	}
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

// readLine returns the next line without its newline. A line longer than
// MaxMessageBytes is consumed to its end and dropped, never held in memory: over is
// then set, with the line's first and last bytes, where its id is (overlong.id).
func readLine(r *bufio.Reader) (line []byte, over *overlong, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case over != nil:
			over.add(chunk)
		case len(buf)+len(chunk) > MaxMessageBytes+1:
			over = newOverlong(buf, chunk)
			buf = nil
		default:
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(buf, "\r\n"), over, err
	}
}

// writeError answers a line that could not be a message. The id is recovered when the
// line is JSON with an id, or an over-long, too deeply nested or cut-short line shows
// one, so the client can match the error to its request.
func (c *lineConn) writeError(line []byte, over *overlong, err error) {
	code := int64(-32700) // parse error
	id := json.RawMessage("null")
	if over != nil {
		code = -32600 // invalid request
		if found := over.id(); found != nil {
			id = found
		}
	} else {
		var probe struct {
			ID json.RawMessage `json:"id"`
		}
		switch {
		case json.Unmarshal(line, &probe) == nil:
			code = -32600
			if len(probe.ID) > 0 {
				id = probe.ID
			}
		default:
			// Not JSON to encoding/json either: nested past its limit, or cut
			// short. Its id, where the line shows one whole at either end, is
			// found as in an over-long line's kept bytes (and at the same
			// bounded cost).
			if found := newOverlong(line, nil).id(); found != nil {
				id = found
			}
		}
	}
	c.writeErrorResponse(id, code, err.Error())
}

func (c *lineConn) writeErrorResponse(id json.RawMessage, code int64, msg string) {
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	c.writeLine(resp)
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

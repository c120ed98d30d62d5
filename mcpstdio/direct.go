package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/internal/exactjson"
)

// Direct answers tools/call requests on the goroutine that read them (see
// lineConn.directCall): a server that implements it skips the SDK's dispatch for
// its plain tool calls. The transport decides which requests qualify as far as
// the protocol goes; Takes decides the rest.
type Direct interface {
	// Takes reports whether Call answers a tools/call request of the tool name
	// now (the session is initialized and the tool is the server's); false
	// leaves the request to the SDK. It runs on the reading goroutine before the
	// next line is read, so it is quick and never blocks.
	Takes(name string) bool
	// Call answers a call Takes took, as the SDK's handler for it would. ctx is
	// cancelled, with a cause, when the client cancels the request
	// (notifications/cancelled) or the session ends. multiRoundTrip reports
	// that the session takes multi round-trip requests (MCP 2026-07-28 and
	// later), whose results the SDK marks with a resultType. res is never nil.
	Call(ctx context.Context, c *ToolCall) (res *mcp.CallToolResult, multiRoundTrip bool)
	// ServerInfo is the serverInfo the SDK puts in the _meta of the results of
	// requests that carry MCP 2026-07-28 per-request metadata.
	ServerInfo() *mcp.Implementation
}

// ToolCall is a tools/call request the transport answers through Direct.
type ToolCall struct {
	Name      string
	Arguments json.RawMessage // as sent; nil when absent
	Meta      json.RawMessage // the request's _meta as sent; nil when absent
	// NewProtocol: the request carries the per-request metadata of MCP
	// 2026-07-28 (NewProtocol), well-formed.
	NewProtocol bool
	// ProgressToken is the request's _meta.progressToken (a string or a number,
	// kept as written), nil for none.
	ProgressToken any
}

// directCall returns how to answer a tools/call request the transport can answer
// itself, or nil to pass the request to the SDK.
//
// The SDK hands every request through two fresh goroutines before the tool handler
// runs (half a millisecond on a small VM, more than the call itself); answering on
// the goroutine that read the request skips that. Only plain calls qualify: the
// params hold nothing but name, arguments and _meta, Direct takes the tool, and
// _meta is either not the per-request protocol metadata of MCP 2026-07-28 or that
// metadata, well-formed, for exactly that version. Anything else goes to the SDK,
// which answers or refuses it. The answer is what the SDK would send: Direct.Call
// answers as the server's SDK handler does, and the result is encoded as the SDK
// encodes it, with for 2026-07-28 the same serverInfo annotation.
func (c *lineConn) directCall(req *jsonrpc.Request) *ToolCall {
	if c.direct == nil || req == nil || req.Method != "tools/call" || !req.ID.IsValid() {
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
	if !c.direct.Takes(*params.Name) {
		return nil
	}
	d := &ToolCall{Name: *params.Name, Arguments: params.Arguments, Meta: params.Meta}
	if params.Meta != nil {
		var ok bool
		if d.NewProtocol, ok = newProtocolMeta(params.Meta); !ok {
			return nil
		}
		d.ProgressToken = progressToken(params.Meta)
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

// NewProtocol is the MCP version whose per-request metadata the direct path
// knows; requests naming any other version of that form go to the SDK.
const NewProtocol = "2026-07-28"

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
	if json.Unmarshal(v, &version) != nil || version != NewProtocol {
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
func (c *lineConn) runDirect(ctx context.Context, cancel context.CancelCauseFunc, req *jsonrpc.Request, d *ToolCall) {
	defer cancel(nil)
	res, multiRoundTrip := c.direct.Call(ctx, d)
	if d.NewProtocol {
		res.SetMeta(map[string]any{mcp.MetaKeyServerInfo: c.direct.ServerInfo()})
	}
	resp := &jsonrpc.Response{ID: req.ID}
	if raw, err := json.Marshal(res); err != nil {
		resp.Error = fmt.Errorf("encoding the result: %w", err)
	} else {
		resp.Result = withResultType(raw, res, multiRoundTrip)
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

// withResultType adds to raw, the encoding of res, the resultType the SDK gives
// the results of a session that takes multi round-trip requests (newEra): the
// direct path answers as the SDK does (its setter is the SDK's own).
func withResultType(raw []byte, res *mcp.CallToolResult, newEra bool) []byte {
	if !newEra || len(raw) < 2 || raw[len(raw)-1] != '}' {
		return raw
	}
	kind := `,"resultType":"complete"}`
	if res.InputRequests != nil {
		kind = `,"resultType":"input_required"}`
	}
	return append(raw[:len(raw)-1:len(raw)-1], kind...)
}

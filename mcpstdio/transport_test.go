package mcpstdio

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/internal/stdiotest"
)

// session is an SDK server with no tools serving one session over a Transport
// on in-memory pipes.
type session struct {
	*stdiotest.Pipes
	tr *Transport
}

func startSession(t *testing.T, direct Direct) *session {
	t.Helper()
	p := stdiotest.New(t)
	tr := &Transport{In: p.ServerIn, Out: p.ServerOut, Direct: direct}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		ss.Close()
		_ = ss.Wait()
	})
	return &session{Pipes: p, tr: tr}
}

// initialize opens the session as a client of MCP 2025-06-18.
func (ss *session) initialize() {
	ss.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ss.Next()
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// fakeDirect takes the tool "echo", whose call answers its arguments as text,
// or waits for its context to end when they are {"wait":true}.
type fakeDirect struct {
	calls chan *ToolCall // each call, when set
}

func (d *fakeDirect) Takes(name string) bool { return name == "echo" }

func (d *fakeDirect) Call(ctx context.Context, c *ToolCall) (*mcp.CallToolResult, bool) {
	if d.calls != nil {
		d.calls <- c
	}
	var args struct{ Wait bool }
	if json.Unmarshal(c.Arguments, &args) == nil && args.Wait {
		<-ctx.Done()
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: context.Cause(ctx).Error()}}}, false
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(c.Arguments)}}}, false
}

func (d *fakeDirect) ServerInfo() *mcp.Implementation {
	return &mcp.Implementation{Name: "t", Version: "1"}
}

// TestPlainToolCall: the fast decoder gives the request DecodeMessage gives, and
// leaves every other shape to it.
func TestPlainToolCall(t *testing.T) {
	for _, tc := range []struct {
		line  string
		plain bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`, true},
		{`{"params":{},"id":"a b","method":"tools/call","jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":null}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{},"x":1}`, false},
		{`{"jsonrpc":"2.0","ID":7,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":[1],"method":"tools/call","params":{}}`, false},
		{`[1,2,3,4]`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}`, false},
		// What the SDK refuses is the SDK's to refuse: repeated members (here the
		// first is invalid), nesting deeper than its limit, trailing data.
		{`{"jsonrpc":1,"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1e400,"id":7,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"` + strings.Repeat("[", 2000) + `"}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}} {}`, false},
	} {
		c := &lineConn{direct: &fakeDirect{}}
		req, ok := c.plainToolCall([]byte(tc.line))
		if ok != tc.plain {
			t.Errorf("%s: plain %v, want %v", tc.line, ok, tc.plain)
			continue
		}
		if !ok {
			continue
		}
		msg, err := jsonrpc.DecodeMessage([]byte(tc.line))
		if err != nil {
			t.Fatalf("%s: DecodeMessage: %v", tc.line, err)
		}
		sdk := msg.(*jsonrpc.Request)
		if req.ID != sdk.ID || req.Method != sdk.Method || string(req.Params) != string(sdk.Params) {
			t.Errorf("%s: got %+v, DecodeMessage gives %+v", tc.line, req, sdk)
		}
	}
}

// TestOverlongLineAnsweredWithItsID: a line over MaxMessageBytes is refused with the
// id of the request it held, wherever the id is (the Go SDK writes it second, the
// TypeScript SDK last), so the client can match the error; null only when no
// top-level id can be read. The session goes on.
func TestOverlongLineAnsweredWithItsID(t *testing.T) {
	ss := startSession(t, nil)
	ss.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ss.Next()
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	big := `{"name":"execute_js","arguments":{"code":"'` + strings.Repeat("a", MaxMessageBytes) + `'.length","id":99}}`
	for _, tc := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + big + `}`, `7`},
		{`{"method":"tools/call","params":` + big + `,"jsonrpc":"2.0","id":8}`, `8`},
		{`{"method":"tools/call","params":` + big + `, "id" : "req-9" , "jsonrpc":"2.0"}` + "\r", `"req-9"`},
		{`{"params":` + big + `,"method":"tools/call","jsonrpc":"2.0"}`, `null`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":` + big + `}`, `null`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":` + big + `}`, `null`},
	} {
		ss.Send(tc.line)
		l := ss.Next()
		if !strings.Contains(l, `"id":`+tc.id+`}`) && !strings.Contains(l, `"id":`+tc.id+`,`) || !strings.Contains(l, `-32600`) {
			t.Errorf("over-long line %.60s…%s: reply %s, want id %s", tc.line, tc.line[len(tc.line)-40:], l, tc.id)
		}
	}
	ss.Send(`{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	if l := ss.Next(); !strings.Contains(l, `"id":10`) {
		t.Errorf("ping after over-long lines: %s", l)
	}
}

// TestOverlongID: the id is read from the kept ends of a line only where it is a
// member of the top-level object.
func TestOverlongID(t *testing.T) {
	for _, tc := range []struct{ head, tail, id string }{
		{`{"jsonrpc":"2.0","id":3,"params":{"a":"xx`, `x"}}`, `3`},
		{`{"id":"s","params":`, ``, `"s"`},
		{`{"params":{"id":4,"a":"x`, `x"},"jsonrpc":"2.0"}`, ``},
		{`{"params":{"a":"x`, `x","id":5}}`, ``},
		{`{"params":{"a":"x`, `x,\"id\":5}"}`, ``},
		{`{"params":{"a":"x`, `x"},"id":6,"b":[{"id":7}]}`, `6`},
		{`{"params":{"a":"x`, `x"},"id":null}`, ``},
		{`{"params":{"a":"x`, `x"}, "id": 12 }  `, `12`},
		{`[{"id":1`, ``, ``},
	} {
		o := &overlong{head: []byte(tc.head), tail: []byte(tc.tail)}
		if got := string(o.id()); got != tc.id {
			t.Errorf("%s…%s: id %q, want %q", tc.head, tc.tail, got, tc.id)
		}
	}
}

// TestDeepLineAnsweredWithItsID (issue 20 item 11): a line nested deeper than
// any JSON decoder here takes is answered with its id, wherever it stands,
// not with id null (the client would wait for its timeout); with no id shown,
// null.
func TestDeepLineAnsweredWithItsID(t *testing.T) {
	ss := startSession(t, nil)
	ss.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ss.Next()
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, n := range []int{2000, 20000, 500000} {
		deep := `{"name":"execute_js","arguments":{"code":"1","x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`
		for _, tc := range []struct{ line, id string }{
			{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + deep + `}`, `7`},
			{`{"method":"tools/call","params":` + deep + `,"jsonrpc":"2.0","id":"req-8"}`, `"req-8"`},
			{`{"method":"tools/call","params":` + deep[:len(deep)-n/2] + `,"jsonrpc":"2.0","id":9}`, `9`}, // unbalanced too
			{`{"jsonrpc":"2.0","method":"tools/call","params":` + deep + `}`, `null`},
		} {
			ss.Send(tc.line)
			l := ss.Next()
			if !strings.Contains(l, `"id":`+tc.id+`}`) && !strings.Contains(l, `"id":`+tc.id+`,`) || !strings.Contains(l, `"error"`) {
				t.Errorf("depth %d, %.50s…%s: reply %.200s, want id %s", n, tc.line, tc.line[len(tc.line)-30:], l, tc.id)
			}
		}
	}
	ss.Send(`{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	if l := ss.Next(); !strings.Contains(l, `"id":10`) {
		t.Errorf("ping after deep lines: %s", l)
	}
}

// TestDirectPath: a call Direct takes is answered by it, with what the request
// carried; one it does not take is the SDK's; a direct call is cancelled by
// notifications/cancelled; a second request with the id of one in progress is
// refused (id null); reading goes on while a direct call runs.
func TestDirectPath(t *testing.T) {
	d := &fakeDirect{calls: make(chan *ToolCall, 8)}
	ss := startSession(t, d)
	ss.initialize()

	const meta = `"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	ss.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":1},` + meta + `}}`)
	l := ss.Next()
	if !strings.Contains(l, `"id":2`) || !strings.Contains(l, `{\"x\":1}`) || !strings.Contains(l, `"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}`) {
		t.Errorf("direct call: %s", l)
	}
	c := <-d.calls
	if c.Name != "echo" || string(c.Arguments) != `{"x":1}` || !c.NewProtocol || string(c.ProgressToken.(json.RawMessage)) != `"p1"` || !strings.Contains(string(c.Meta), "clientCapabilities") {
		t.Errorf("the call as Direct got it: %+v", c)
	}

	// A tool Direct does not take is the SDK's (which has none).
	ss.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other","arguments":{}}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":3`) || !strings.Contains(l, `"error"`) {
		t.Errorf("call of a tool not taken: %s", l)
	}
	select {
	case c := <-d.calls:
		t.Errorf("Direct got a call it did not take: %+v", c)
	default:
	}

	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"wait":true}}}`)
	<-d.calls // the call runs
	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":null`) || !strings.Contains(l, "already in use") {
		t.Errorf("duplicate id: %s", l)
	}
	ss.Send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if l := ss.Next(); !strings.Contains(l, `"id":6`) {
		t.Errorf("ping during a call: %s", l)
	}
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":5`) || !strings.Contains(l, "the client cancelled the request: test") {
		t.Errorf("cancelled call: %s", l)
	}
	// Positive control: the id is free again, and the call is answered.
	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"y":2}}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":5`) || !strings.Contains(l, `{\"y\":2}`) {
		t.Errorf("call after cancel: %s", l)
	}
	// A slot is given back right after its answer is written, so a moment
	// after the client has read it: none stays held.
	for giveUp := time.Now().Add(10 * time.Second); ss.tr.InFlight() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(giveUp) {
			t.Fatalf("%d slots held with every request answered", ss.tr.InFlight())
		}
	}
}

// TestResultType: results of a session that takes multi round-trip requests
// carry the resultType the SDK gives them; others are left as they are.
func TestResultType(t *testing.T) {
	raw := []byte(`{"content":[]}`)
	for _, tc := range []struct {
		res    *mcp.CallToolResult
		newEra bool
		want   string
	}{
		{&mcp.CallToolResult{}, false, `{"content":[]}`},
		{&mcp.CallToolResult{}, true, `{"content":[],"resultType":"complete"}`},
		{&mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}, true, `{"content":[],"resultType":"input_required"}`},
	} {
		if got := string(withResultType(raw, tc.res, tc.newEra)); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
	if string(raw) != `{"content":[]}` {
		t.Errorf("raw changed: %s", raw)
	}
}

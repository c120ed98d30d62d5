package supervisor

import (
	"context"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/mcpstdio"
)

// directCalls answers the plain tool calls of a stdio session on the
// transport's direct path (mcpstdio.Direct): the same call function the SDK's
// handler runs (addTool), through the same serveCall, so the answer is the one
// the SDK would send.
type directCalls struct {
	s       *Server
	tools   map[string]toolCall
	session *atomic.Pointer[mcp.ServerSession] // set once the SDK has connected

	answered atomic.Int64 // calls answered on the direct path, for tests
}

var _ mcpstdio.Direct = (*directCalls)(nil)

// Takes implements mcpstdio.Direct: the session has been initialized by the SDK
// and the tool is ours.
func (d *directCalls) Takes(name string) bool {
	ss := d.session.Load()
	return ss != nil && ss.InitializeParams() != nil && d.tools[name] != nil
}

// Call implements mcpstdio.Direct, as the SDK's handler does (Server.serveCall).
func (d *directCalls) Call(ctx context.Context, c *mcpstdio.ToolCall) (*mcp.CallToolResult, bool) {
	d.answered.Add(1)
	ss := d.session.Load()
	ctx = WithProgress(ctx, mcpProgress(ss, c.ProgressToken))
	res, err := d.s.serveCall(ctx, callParams{session: ss, caps: metaCapabilities(c.Meta, ss), name: c.Name, args: c.Arguments}, d.tools[c.Name])
	if err != nil { // only retries err, which the direct path leaves to the SDK
		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
	}
	return res, multiRoundTrip(ss)
}

// ServerInfo implements mcpstdio.Direct.
func (d *directCalls) ServerInfo() *mcp.Implementation { return implementation }

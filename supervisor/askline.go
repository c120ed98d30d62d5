package supervisor

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/mcpstdio"
)

// How a call's questions reach the user: the transport of a question, whatever
// it asks (ask.go, askreach.go decide that). Each tools/call gets a line in its
// context when its client can be asked, and none otherwise:
//
//   - a client of a 2025 revision that declared form elicitation (at
//     initialize) is asked with elicitation/create requests of the server's own;
//   - a client of MCP 2026-07-28 that declares elicitation in the request's own
//     _meta is asked through multi round-trip requests: the call answers
//     input_required with the question, and the client's retry brings the
//     answer (roundtrip.go).
//
// serveCall is where both paths of a tools/call (the SDK's handler and the
// stdio transport's direct path, directCalls) meet and the era is told apart.
//
// The line also keeps the call's slot of the request window (mcpstdio/backpressure.go)
// honest while the call waits for the user. The slot is lent back to the window
// once however many of the call's questions wait (a command may ask about two
// hosts at once), taken again when the last is answered, and always held again
// before the request it belongs to is answered (settle): the answer gives it
// back, so a slot is never given back twice nor taken twice.

// line is how the questions of one call reach the user.
type line struct {
	elicit func(ctx context.Context, q *mcp.ElicitParams) (*mcp.ElicitResult, error)
	window lender // the request window of the session; nil: nothing to lend

	mu      sync.Mutex
	waiting int    // questions of the call waiting (put)
	reclaim func() // set while the slot is lent
	done    bool   // the request holding the slot is being answered: nothing to lend
}

// lineKey carries a call's line in its context.
type lineKey struct{}

func withLine(ctx context.Context, l *line) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, lineKey{}, l)
}

// lineOf is the line of the call started with ctx, nil when nobody can be asked.
func lineOf(ctx context.Context) *line {
	l, _ := ctx.Value(lineKey{}).(*line)
	return l
}

// lend gives the call's slot back to the window while a question waits; the
// func it returns ends that question's wait (once).
func (l *line) lend() (done func()) {
	l.mu.Lock()
	l.waiting++
	give := l.window != nil && l.reclaim == nil && !l.done
	if give {
		l.reclaim = l.window.Lend()
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.waiting--
			var take func()
			if l.waiting == 0 {
				take, l.reclaim = l.reclaim, nil
			}
			l.mu.Unlock()
			if take != nil {
				take()
			}
		})
	}
}

// settle holds the call's slot again, if lent, before the request it belongs to
// is answered; nothing is lent after it, until attach.
func (l *line) settle() {
	l.mu.Lock()
	l.done = true
	take := l.reclaim
	l.reclaim = nil
	l.mu.Unlock()
	if take != nil {
		take()
	}
}

// attach gives the line the slot of a new request of the call (a retry on
// 2026-07-28), lent at once if questions of the call wait.
func (l *line) attach() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = false
	if l.window != nil && l.waiting > 0 && l.reclaim == nil {
		l.reclaim = l.window.Lend()
	}
}

// callParams is one tools/call request, as the transport of questions needs it.
type callParams struct {
	session *mcp.ServerSession
	// caps are the capabilities the client declared: in the request's own
	// _meta on 2026-07-28, else at initialize.
	caps      *mcp.ClientCapabilities
	name      string
	args      json.RawMessage
	state     string               // requestState of a retry (2026-07-28)
	responses mcp.InputResponseMap // inputResponses of a retry
}

// serveCall runs one tools/call of tool call with the line its client can be
// asked through. An error is a protocol error (a retry that names no call of
// this server, or repeats it wrongly): the SDK answers it as a JSON-RPC error.
func (s *Server) serveCall(ctx context.Context, p callParams, call toolCall) (*mcp.CallToolResult, error) {
	ctx = withSession(ctx, p.session)
	if multiRoundTrip(p.session) {
		if p.state != "" {
			return s.rounds.resume(ctx, p)
		}
		// inputResponses without requestState answer no question of ours:
		// ignored, as the specification has a server do with what it does not
		// recognize.
		return s.rounds.start(ctx, p, call, s.lenderOf(p.session)), nil
	}
	var l *line
	if canElicit(p.session) {
		ss := p.session
		l = &line{elicit: ss.Elicit, window: s.lenderOf(ss)}
		ctx = withLine(ctx, l)
	}
	res := call(ctx, p.args)
	if l != nil {
		l.settle()
	}
	return res, nil
}

// askTimeout is how long the user has to answer a question (--ask-timeout).
func (s *Server) askTimeout() time.Duration {
	if s.opts.AskTimeout > 0 {
		return s.opts.AskTimeout
	}
	return DefaultAskTimeout
}

// lenderOf is the request window of the session ss, nil where it has none (a
// transport other than stdio).
func (s *Server) lenderOf(ss *mcp.ServerSession) lender {
	if ss == nil {
		return nil
	}
	if l, ok := s.questions.lenders.Load(ss); ok {
		return l.(lender)
	}
	return nil
}

// multiRoundTrip reports whether the client of ss is asked through multi round-trip
// requests: its protocol is 2026-07-28 or later, decided as the SDK decides it (the
// SDK marks such results complete or input_required, and refuses the server's own
// requests to such clients).
func multiRoundTrip(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= mcpstdio.NewProtocol
}

// elicits reports whether capabilities declare form elicitation (an empty
// elicitation capability means form, as the specification says).
func elicits(c *mcp.ClientCapabilities) bool {
	if c == nil || c.Elicitation == nil {
		return false
	}
	e := c.Elicitation
	return e.Form != nil || e.URL == nil
}

// metaCapabilities is the client capabilities of a request's _meta (2026-07-28),
// else those ss declared at initialize.
func metaCapabilities(meta json.RawMessage, ss *mcp.ServerSession) *mcp.ClientCapabilities {
	var m struct {
		Caps *mcp.ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	}
	if len(meta) > 0 && json.Unmarshal(meta, &m) == nil && m.Caps != nil {
		return m.Caps
	}
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.Capabilities
		}
	}
	return nil
}

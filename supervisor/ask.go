package supervisor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/mcpstdio"
)

// Asking the user. A call beyond the ceiling, on a client that declared MCP
// elicitation, makes the server ask the user one question through the client:
// "Let this command reach registry.npmjs.org (ports 80 and 443)?", answered
// once (this call), session (this server's life, kept in memory), always
// (written to the ceiling file) or no. The answer comes only as the client's
// answer to the server's elicitation request: nothing in a call's arguments can
// stand for it, so the model cannot answer for the user.
//
//	client                         autobox
//	  │ tools/call (beyond ceiling) ──▶ │ Check: beyond; the client can ask
//	  │                                 │ the call lends its request slot back
//	  │ ◀── elicitation/create          │ (one question at a time)
//	  │ (the user answers)              │
//	  │ result {action, answer} ──────▶ │ once / session / always: run the call
//	  │ ◀── the tool's result           │ no, decline, cancel, timeout: refuse it
//
// On MCP 2026-07-28 the question goes as the call's answer, input_required, and
// the answer comes with the client's retry of the call (roundtrip.go); the
// line a call asks through (askline.go) tells the eras apart.
//
// Backpressure (mcpstdio/backpressure.go): a call that waits for the user gives its slot
// of the request window back while it waits, and takes one again before it goes
// on, so a window full of calls waiting for answers cannot stop the reader from
// reading those answers. At most maxWaiting calls wait for the user at once;
// more are refused at once, so the window stays bounded.

// maxWaiting bounds the calls waiting for the user's answer at once.
const maxWaiting = 16

// DefaultAskTimeout is how long the user has to answer; below the 60 s that
// common clients give a request.
const DefaultAskTimeout = 45 * time.Second

// Answers offered to the user.
const (
	answerOnce    = "once"
	answerSession = "session"
	answerAlways  = "always"
	answerNo      = "no"
)

// sessionKey carries the MCP session of a tool call in its context.
type sessionKey struct{}

func withSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionKey{}, ss)
}

// lender gives a request's window slot back while the call waits for the user;
// the func it returns takes one again (mcpstdio.Transport.Lend).
type lender interface{ Lend() (reclaim func()) }

var _ lender = (*mcpstdio.Transport)(nil)

// questions serializes the questions to the user.
type questions struct {
	turn    chan struct{} // one question at a time
	waiting atomic.Int32
	lenders sync.Map // *mcp.ServerSession → lender
	rate    askRate  // questions per minute and hour (askrate.go)
}

// canElicit reports whether the client of ss can be asked with elicitation/create
// requests: it declared form elicitation, on a protocol version where the server
// may send it requests (2026-07-28 clients are asked otherwise: askline.go).
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < mcpstdio.NewProtocol && elicits(ip.Capabilities)
}

// ask puts the excesses es of a call to the user, and applies the answer:
// nil lets the call run. recheck lists the excesses again, after this call's
// turn came (an answer to another question may have granted them).
func (s *Server) ask(ctx context.Context, what string, es []ceiling.Excess, recheck func() []ceiling.Excess) error {
	l := lineOf(ctx)
	if l == nil {
		return refusal(es, "the user was not asked: only an MCP client that supports elicitation can ask them")
	}
	c := s.Ceiling()
	always := true
	answer, why := s.put(ctx, l, func(timeout time.Duration) *mcp.ElicitParams {
		if es = recheck(); len(es) == 0 {
			return nil
		}
		for _, e := range es {
			if c.FromFlag(e.Rule) {
				always = false
			}
		}
		wants := make([]string, len(es))
		for i, e := range es {
			wants[i] = shownText(e.Want)
		}
		return s.question(c, what, wants, true, always, timeout)
	})
	switch {
	case why != "" && ctx.Err() != nil:
		return fmt.Errorf("call cancelled while the user was asked: %w", context.Cause(ctx))
	case why != "":
		return refusal(es, why)
	case answer == answerOnce:
		s.log.Info("the user allowed a call beyond the ceiling, once", "call", what)
	case answer == answerSession:
		s.grants.Apply(es)
		s.log.Info("the user allowed a call beyond the ceiling for this session", "call", what)
	case answer == answerAlways && always:
		s.grants.Apply(es)
		if err := ceiling.Update(c.File, func(f *ceiling.File) { ceiling.Edit(f, es) }); err != nil {
			s.log.Error("the user allowed a call beyond the ceiling always, but the ceiling file could not be written; allowed for this session", "err", err)
		}
	case answer == "": // granted meanwhile
	default:
		return refusal(es, "the user answered no")
	}
	return nil
}

// put asks the user one question, when its turn comes (one question at a
// time), and returns their answer: once, session, always, or "" when prepare,
// called once the turn came, returns no question (nothing to ask any more).
// why is set when there is no answer to act on: the user declined or dismissed
// the question, did not answer in time, or asking failed; any other answer is
// the caller's to refuse. l is the call's line to the user (askline.go).
func (s *Server) put(ctx context.Context, l *line, prepare func(timeout time.Duration) *mcp.ElicitParams) (answer, why string) {
	if s.questions.waiting.Add(1) > maxWaiting {
		s.questions.waiting.Add(-1)
		return "", fmt.Sprintf("the user was not asked: %d calls are already waiting for an answer", maxWaiting)
	}
	defer s.questions.waiting.Add(-1)
	defer l.lend()()
	timeout := s.askTimeout()
	unanswered := fmt.Sprintf("the user did not answer within %s", timeout)
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case s.questions.turn <- struct{}{}:
		defer func() { <-s.questions.turn }()
	case <-actx.Done():
		return "", unanswered
	}
	q := prepare(timeout)
	if q == nil {
		return "", ""
	}
	if why := s.questions.rate.take(time.Now(), s.opts.MaxQuestions); why != "" {
		return "", why // askrate.go: the server's bound
	}
	res, err := l.elicit(actx, q)
	switch {
	case err != nil && actx.Err() != nil:
		return "", unanswered
	case err != nil:
		return "", "asking the user failed: " + err.Error()
	case res.Action == "decline":
		return "", "the user declined"
	case res.Action != "accept":
		return "", "the user dismissed the question"
	}
	if answer, _ = res.Content["answer"].(string); answer == "" {
		answer = answerNo // an accepted form without an answer allows nothing
	}
	return answer, ""
}

// question is the elicitation of what a call wants (wants, already escaped for
// a person): one question, in the user's words. beyond says it is beyond the
// ceiling c; always offers "always", written to c's file.
func (s *Server) question(c *ceiling.Ceiling, what string, wants []string, beyond, always bool, timeout time.Duration) *mcp.ElicitParams {
	var b strings.Builder
	if len(wants) == 1 {
		fmt.Fprintf(&b, "Let %s %s?", what, wants[0])
	} else {
		fmt.Fprintf(&b, "Let %s do all of this?\n- %s", what, strings.Join(wants, "\n- "))
	}
	b.WriteString("\n")
	if beyond {
		fmt.Fprintf(&b, "This is beyond your autobox ceiling (%s). ", c.File)
	}
	b.WriteString("once: this call only; session: until autobox restarts")
	choices := []any{answerOnce, answerSession}
	if always {
		fmt.Fprintf(&b, "; always: added to %s", c.File)
		choices = append(choices, answerAlways)
	}
	fmt.Fprintf(&b, "; no: refuse it. Unanswered after %s: refused.", timeout)
	choices = append(choices, answerNo)
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: b.String(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"answer": map[string]any{"type": "string", "title": "Allow it?", "enum": choices},
			},
			"required": []any{"answer"},
		},
	}
}

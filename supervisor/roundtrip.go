package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asking the user on MCP 2026-07-28: multi round-trip requests.
//
// A server of that revision sends its client no requests of its own. A call
// that needs the user's answer answers its tools/call request with resultType
// "input_required": the question (an elicitation/create request) in
// inputRequests, and a requestState. The client asks the user, then retries the
// same call, with the same arguments, the answer in inputResponses and the
// requestState echoed. autobox asks while a call runs (before it starts
// anything, or while its command holds a connection to a host for the user),
// so the retry does not start the call again: the call runs on, detached from
// the request that started it (a run), and the retry takes that request's
// place and gets what the call answers next.
//
//	client                                    autobox
//	  │ tools/call id 1 ────────────────────▶ │ the call runs
//	  │                                       │ it needs the user: a question,
//	  │ ◀── id 1: input_required {ask}, S1    │ the call waits (its clock stopped)
//	  │ (the user answers)                    │
//	  │ tools/call id 2 (same name, arguments), │
//	  │   inputResponses {ask}, requestState S1 ▶ │ S1 finds the call: the answer goes to
//	  │                                       │ its question, id 2 takes id 1's place
//	  │ ◀── id 2: the tool's result, or input_required {ask}, S2 (its next question)
//
// requestState is a random token of this server naming one question waiting for
// its answer: nothing in it is trusted, it only finds the question. A token is
// used once; the retry must repeat the call's tool name and arguments (else a
// JSON-RPC error, invalid params); a retry without the answer is asked the
// same question again, as the specification has it.
//
// Bounds. A question waits for the retry as long as it would wait for an
// elicitation's answer (--ask-timeout). When that passes without the retry,
// the question is unanswered (refused, as an unanswered elicitation is) and
// the call is ended at once, its command killed: no request of the client
// waits for it any more, so nobody would read its result, and a detached call
// must not run on unseen. A retry that comes later gets what the ended call
// answered, for keepEnded; after that its token names nothing. Questions wait
// one at a time and at most maxWaiting calls wait to ask (ask.go), so the
// calls waiting for a retry are bounded too; a call without a question holds
// its request, as any call does.

// askKey is the key of autobox's question in inputRequests and inputResponses.
const askKey = "ask"

// keepEnded is how long a call that ended while its question waited for the
// retry keeps its result for a late retry.
const keepEnded = time.Minute

// roundTrips holds the calls of 2026-07-28 clients that ask the user.
type roundTrips struct {
	life    context.Context // the server's: calls end with it
	timeout time.Duration   // --ask-timeout, for messages

	mu    sync.Mutex
	asked map[string]*question // by requestState
}

func newRoundTrips(life context.Context, timeout time.Duration) *roundTrips {
	return &roundTrips{life: life, timeout: timeout, asked: map[string]*question{}}
}

// question is a question of a run, put to the client in an input_required
// answer.
type question struct {
	run      *run
	state    string
	params   *mcp.ElicitParams
	deadline time.Time              // zero: none
	answer   chan *mcp.ElicitResult // the retry's answer (buffered)
}

// run is a call of a 2026-07-28 client that can ask the user, from its first
// request to its result.
type run struct {
	rt     *roundTrips
	name   string
	args   any // its arguments, decoded, which retries must repeat
	ctx    context.Context
	cancel context.CancelCauseFunc
	line   *line         // nil: its client cannot be asked
	ended  chan struct{} // closed once final is set

	mu       sync.Mutex
	attached chan *mcp.CallToolResult // the request waiting for the next answer; nil while none does
	pending  *question                // the question waiting for the retry
	final    *mcp.CallToolResult
}

// start runs a call of a 2026-07-28 client, and answers its first request: the
// result, or its first question.
func (rt *roundTrips) start(ctx context.Context, p callParams, call toolCall, window lender) *mcp.CallToolResult {
	r := &run{rt: rt, name: p.name, ended: make(chan struct{})}
	if json.Unmarshal(p.args, &r.args) != nil {
		r.args = nil // the call refuses such arguments itself
	}
	ch := make(chan *mcp.CallToolResult, 1)
	r.attached = ch
	// The call outlives its first request (answered with a question): its
	// context keeps the request's values, and ends with the server or when a
	// request of the call is cancelled (await).
	r.ctx, r.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(rt.life, func() { r.cancel(errShuttingDown) })
	cctx := r.ctx
	if elicits(p.caps) {
		r.line = &line{elicit: r.elicit, window: window}
		cctx = withLine(cctx, r.line)
	}
	go func() {
		defer stop()
		r.finish(call(cctx, p.args))
	}()
	return r.await(ctx, ch)
}

// await is the run's next answer to the request of ctx: its result, or a
// question. A request cancelled (or a session ended) cancels the call, which
// then answers promptly.
func (r *run) await(ctx context.Context, ch chan *mcp.CallToolResult) *mcp.CallToolResult {
	select {
	case res := <-ch:
		return res
	case <-ctx.Done():
		r.cancel(context.Cause(ctx))
		return <-ch
	}
}

// finish records the call's result and gives it to the request waiting, if any.
func (r *run) finish(res *mcp.CallToolResult) {
	if r.line != nil {
		r.line.settle()
	}
	r.mu.Lock()
	r.final = res
	close(r.ended)
	ch := r.attached
	r.attached = nil
	r.mu.Unlock()
	if ch != nil {
		ch <- res
	}
}

// errNotWaiting: a question of a run that no request of the client waits for.
var errNotWaiting = errors.New("no request of the client waits for this call")

// elicit is the run's line: it answers the request waiting with the question,
// and waits for the retry that brings the answer, at most until ctx ends (the
// user's time to answer, or the call's end).
func (r *run) elicit(ctx context.Context, q *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	qu := &question{run: r, state: rand.Text(), params: q, answer: make(chan *mcp.ElicitResult, 1)}
	qu.deadline, _ = ctx.Deadline()
	// The question answers the request that holds the call's slot.
	r.line.settle()
	r.mu.Lock()
	ch := r.attached
	if ch == nil {
		r.mu.Unlock()
		return nil, errNotWaiting
	}
	r.attached = nil
	r.pending = qu
	r.rt.add(qu)
	r.mu.Unlock()
	ch <- inputRequired(qu)

	select {
	case a := <-qu.answer:
		return a, nil
	case <-ctx.Done():
	}
	r.mu.Lock()
	lapsed := r.pending == qu
	if lapsed {
		r.pending = nil
	}
	r.mu.Unlock()
	if lapsed && errors.Is(ctx.Err(), context.DeadlineExceeded) && r.ctx.Err() == nil {
		r.cancel(fmt.Errorf("the client did not retry the call with the user's answer within %s", r.rt.timeout))
	}
	return nil, ctx.Err()
}

// inputRequired is the answer that puts qu to the client.
func inputRequired(qu *question) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{askKey: qu.params}, RequestState: qu.state}
}

// add registers qu under its token, until the retry uses it or, unused, until
// its call ended keepEnded ago.
func (rt *roundTrips) add(qu *question) {
	rt.mu.Lock()
	rt.asked[qu.state] = qu
	rt.mu.Unlock()
	go func() {
		r := qu.run
		<-r.ended
		t := time.NewTimer(keepEnded)
		defer t.Stop()
		select {
		case <-t.C:
		case <-rt.life.Done():
		}
		rt.forget(qu.state)
	}()
}

func (rt *roundTrips) forget(state string) {
	rt.mu.Lock()
	delete(rt.asked, state)
	rt.mu.Unlock()
}

// resume answers a retry: the answer goes to the question its requestState
// names, and the retry waits for the call's next answer.
func (rt *roundTrips) resume(ctx context.Context, p callParams) (*mcp.CallToolResult, error) {
	rt.mu.Lock()
	qu := rt.asked[p.state]
	rt.mu.Unlock()
	if qu == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("requestState names no question of this server waiting for an answer: it was answered already, or its call ended more than %s ago", keepEnded)}
	}
	r := qu.run
	var args any
	if p.name != r.name || json.Unmarshal(p.args, &args) != nil || !reflect.DeepEqual(args, r.args) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the retry of a call that asked the user must repeat its tool name and arguments unchanged"}
	}
	a, answered := p.responses[askKey].(*mcp.ElicitResult)
	r.mu.Lock()
	switch {
	case r.pending == qu && !answered:
		// No answer to the question: asked again, with the same token.
		r.mu.Unlock()
		return inputRequired(qu), nil
	case r.pending == qu && (qu.deadline.IsZero() || time.Now().Before(qu.deadline)):
		r.pending = nil
		ch := make(chan *mcp.CallToolResult, 1)
		r.attached = ch
		r.mu.Unlock()
		rt.forget(qu.state)
		r.line.attach()
		qu.answer <- a
		return r.await(ctx, ch), nil
	case r.pending != nil && r.pending != qu:
		// The call asks another question now (this one was answered late).
		next := r.pending
		r.mu.Unlock()
		return inputRequired(next), nil
	}
	r.mu.Unlock()
	// Too late: the question lapsed, and its call ends (or ended) without
	// the answer. The retry gets what the call answered.
	select {
	case <-r.ended:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	res := *r.final // each request its own copy: the SDK annotates results
	return &res, nil
}

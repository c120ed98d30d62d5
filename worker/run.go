//go:build cgo

package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v8 "rogchap.com/v8go"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// MaxResultBytes bounds the JSON of a call's result value.
const MaxResultBytes = 4 << 20

// warm is a V8 isolate and context made before the call arrives, with the prelude run.
type warm struct {
	in, out   *os.File
	init      *proto.Init
	newCache  []byte // the prelude's code cache, when this worker had to make one
	memoryMb  int
	iso       *v8.Isolate
	ctx       *v8.Context
	internals *v8.Object
	bridgeSeq int
	async     asyncState

	timedOut atomic.Bool
	ended    chan struct{}
	endOnce  sync.Once
}

func newWarm(in, out *os.File, init *proto.Init) (*warm, error) {
	// v8go unfreezes V8's flags itself when it initializes V8, so the heap flags of
	// a rebuilt isolate (build) still apply.
	w := &warm{in: in, out: out, init: init}
	if err := w.build(policy.JSDefaultMemoryMb); err != nil {
		return nil, err
	}
	return w, nil
}

// build makes the isolate (heap limits are read when an isolate is created) and a
// context with the prelude in it.
func (w *warm) build(memoryMb int) error {
	if w.iso != nil {
		w.ctx.Close()
		w.iso.Dispose()
	}
	v8.SetFlags(heapFlags(memoryMb)...)
	w.memoryMb = memoryMb
	w.iso = v8.NewIsolate()
	w.ctx = v8.NewContext(w.iso)
	// The prelude from the code cache of an earlier worker, when it is usable (V8
	// rejects a cache made by another V8 or with other flags, and compiles anew).
	opts := v8.CompileOptions{}
	if len(w.init.PreludeCache) > 0 {
		opts.CachedData = &v8.CompilerCachedData{Bytes: w.init.PreludeCache}
	}
	prelude, err := w.iso.CompileUnboundScript(preludeJS, "autobox:prelude", opts)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	fnv, err := prelude.Run(w.ctx)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	fn, err := fnv.AsFunction()
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	bridge := v8.NewFunctionTemplate(w.iso, w.bridgeCallback).GetFunction(w.ctx)
	bridgeStart := v8.NewFunctionTemplate(w.iso, w.bridgeStartCallback).GetFunction(w.ctx)
	note := v8.NewFunctionTemplate(w.iso, w.noteCallback).GetFunction(w.ctx)
	iv, err := fn.Call(v8.Undefined(w.iso), w.ctx.Global(), bridge, bridgeStart, note)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	if w.internals, err = iv.AsObject(); err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	// A fresh process meets every V8 code path for the first time; one whole dummy
	// call now means the real call finds them warm.
	if !w.init.NoWarmup {
		w.ended = make(chan struct{})
		if res := w.execute(&proto.Run{Code: "({a: [1, 'x']})", TimeoutMs: 1000}, time.Now().Add(time.Second)); !res.OK {
			return fmt.Errorf("warmup: %s", res.Error)
		}
		w.errorString(v8.Undefined(w.iso))
		w.logs()
	}
	// Made after the warm-up, the cache holds the prelude functions it compiled.
	if opts.CachedData == nil || opts.CachedData.Rejected {
		if c := prelude.CreateCodeCache(); c != nil && len(c.Bytes) <= proto.MaxPreludeCache {
			w.newCache = c.Bytes
		}
	}
	return nil
}

// bridgeCallback forwards host.* to the supervisor and blocks for the reply.
// It always returns a JSON string {data} or {error}; the prelude turns errors into throws.
func (w *warm) bridgeCallback(info *v8.FunctionCallbackInfo) *v8.Value {
	req, bad := w.request(info)
	if bad != nil {
		return bad
	}
	if err := proto.Write(w.out, req); err != nil {
		return w.replyValue(nil, "bridge: supervisor unreachable")
	}
	r := w.readReply(w.bridgeSeq)
	return w.replyValue(r.Data, r.Error)
}

// noteCallback tells the supervisor a console line as it is logged (only for
// a call with Run.Progress); nothing comes back.
func (w *warm) noteCallback(info *v8.FunctionCallbackInfo) *v8.Value {
	if args := info.Args(); len(args) == 1 {
		_ = proto.Write(w.out, &proto.Message{Type: proto.TypeLog, Log: args[0].String()})
	}
	return nil
}

// request is the bridge request of a call bridge(op, args) or bridgeStart(op,
// args) from the prelude, with the next id; or the error value to return.
func (w *warm) request(info *v8.FunctionCallbackInfo) (*proto.Message, *v8.Value) {
	args := info.Args()
	if len(args) != 2 {
		return nil, w.replyValue(nil, "bridge: bad call")
	}
	w.bridgeSeq++
	req := &proto.Message{Type: proto.TypeBridge, Bridge: &proto.Bridge{ID: w.bridgeSeq, Op: args[0].String(), Args: json.RawMessage(args[1].String())}}
	if !json.Valid(req.Bridge.Args) {
		return nil, w.replyValue(nil, "bridge: arguments are not JSON")
	}
	return req, nil
}

// replyValue is the JSON string {data} or, when msg is set, {error: msg}.
func (w *warm) replyValue(data json.RawMessage, msg string) *v8.Value {
	var b []byte
	if msg != "" {
		b, _ = json.Marshal(map[string]string{"error": msg})
	} else {
		b, _ = json.Marshal(map[string]json.RawMessage{"data": data})
	}
	v, _ := v8.NewValue(w.iso, string(b))
	return v
}

func (w *warm) end() { w.endOnce.Do(func() { close(w.ended) }) }

// run executes one call and returns its result. Everything it can meet is turned into
// a Result; only a V8 fatal error (heap limit) ends the process instead.
func (w *warm) run(r *proto.Run) *proto.Result {
	if r.MemoryMb != w.memoryMb {
		if err := w.build(r.MemoryMb); err != nil {
			return &proto.Result{Error: "Error: could not create the isolate: " + err.Error(), Result: json.RawMessage("null"), Logs: []string{}}
		}
	}
	w.ended = make(chan struct{})
	timeout := time.Duration(r.TimeoutMs) * time.Millisecond
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		w.timedOut.Store(true)
		w.iso.TerminateExecution()
		w.end()
	})
	defer timer.Stop()

	res := w.execute(r, deadline)
	if w.timedOut.Load() {
		res = &proto.Result{Timeout: true, Error: fmt.Sprintf("TimeoutError: execution exceeded %dms", r.TimeoutMs)}
	}
	if res.Result == nil {
		res.Result = json.RawMessage("null")
	}
	res.Logs = w.logs()
	return res
}

func (w *warm) execute(r *proto.Run, deadline time.Time) *proto.Result {
	if r.AllowNetwork || r.Progress {
		if _, err := w.internals.MethodCall("setup", boolValue(w.iso, r.AllowNetwork), boolValue(w.iso, r.Progress)); err != nil {
			return &proto.Result{Error: "Error: setup: " + err.Error()}
		}
	}
	val, err := w.start(r.Code)
	if err != nil {
		return &proto.Result{Error: jsErrorString(err)}
	}
	p, err := val.AsPromise()
	if err != nil {
		return &proto.Result{Error: "Error: internal: code did not produce a promise"}
	}
	for {
		w.ctx.PerformMicrotaskCheckpoint()
		if w.timedOut.Load() {
			return &proto.Result{}
		}
		if p.State() != v8.Pending {
			break
		}
		if err := w.waitTimer(deadline); err != nil {
			return &proto.Result{Error: err.Error()}
		}
		if w.timedOut.Load() {
			return &proto.Result{}
		}
	}
	if p.State() == v8.Rejected {
		return &proto.Result{Error: w.errorString(p.Result())}
	}
	s, err := w.internals.MethodCall("serialize", p.Result())
	if err != nil {
		if w.timedOut.Load() {
			return &proto.Result{}
		}
		return &proto.Result{Error: "Error: the result could not be serialized: " + jsErrorString(err)}
	}
	out := s.String()
	if len(out) > MaxResultBytes {
		return &proto.Result{Error: fmt.Sprintf("RangeError: the result is %d bytes of JSON, more than the %d-byte limit", len(out), MaxResultBytes)}
	}
	return &proto.Result{OK: true, Result: json.RawMessage(out)}
}

// start runs the code in the first form that compiles (see wrap.go) and returns the
// promise of its value.
func (w *warm) start(code string) (*v8.Value, error) {
	expr, plain, body := wrapCode(code)
	if script, err := w.iso.CompileUnboundScript(expr, "code.js", v8.CompileOptions{}); err == nil {
		return script.Run(w.ctx)
	}
	_, scriptErr := w.iso.CompileUnboundScript(plain, "code.js", v8.CompileOptions{})
	if scriptErr == nil {
		src, err := v8.NewValue(w.iso, plain)
		if err != nil {
			return nil, err
		}
		return w.internals.MethodCall("evaluate", src)
	}
	script, err := w.iso.CompileUnboundScript(body, "code.js", v8.CompileOptions{})
	if err != nil {
		var bodyErr, plainErr *v8.JSError
		if errors.As(err, &bodyErr) && errors.As(scriptErr, &plainErr) && strings.HasPrefix(bodyErr.Message, "SyntaxError") {
			return nil, &v8.JSError{Message: syntaxError(code, bodyErr.Message, bodyErr.Location, plainErr.Message, plainErr.Location)}
		}
		return nil, err
	}
	// Only code V8 accepts reaches the statement finder, so it never meets nesting
	// deeper than V8's own parser allows.
	if withReturn, ok := returnLast(code); ok {
		if s, err := w.iso.CompileUnboundScript(withReturn, "code.js", v8.CompileOptions{}); err == nil {
			script = s
		}
	}
	return script.Run(w.ctx)
}

// waitTimer gives JS the fetch replies that came, or else sleeps until the next
// JS timer is due and runs it, or a fetch reply comes, whichever is first. With
// neither pending the promise can never settle, so it waits out the time limit.
func (w *warm) waitTimer(deadline time.Time) error {
	if ok, err := w.settleReady(0); ok {
		return w.jsError(err)
	}
	nv, err := w.internals.MethodCall("nextTimer")
	if err != nil {
		return errors.New(jsErrorString(err))
	}
	var due <-chan time.Time
	if next := nv.Integer(); next >= 0 {
		wait := time.Duration(next) * time.Millisecond
		if wait <= 0 {
			return w.runTimer()
		}
		if wait <= time.Until(deadline) {
			t := time.NewTimer(wait)
			defer t.Stop()
			due = t.C
		}
	}
	began := time.Now()
	select {
	case <-due:
		return w.runTimer()
	case m, ok := <-w.awaitReply():
		if !ok {
			lostSupervisor()
		}
		w.receive(m)
		_, err := w.settleReady(time.Since(began))
		return w.jsError(err)
	case <-w.ended:
		return nil
	}
}

func (w *warm) runTimer() error {
	_, err := w.internals.MethodCall("runTimer")
	return w.jsError(err)
}

// jsError is err from JS as the call's error, or nil once the call timed out
// (terminating it is what made JS fail).
func (w *warm) jsError(err error) error {
	if err == nil || w.timedOut.Load() {
		return nil
	}
	return errors.New(jsErrorString(err))
}

func (w *warm) errorString(v *v8.Value) string {
	s, err := w.internals.MethodCall("errorString", v)
	if err != nil {
		return "Uncaught exception (could not be rendered)"
	}
	return s.String()
}

func (w *warm) logs() []string {
	lv, err := w.internals.MethodCall("logs")
	if err != nil || lv.String() == "[]" {
		return []string{}
	}
	var logs []string
	if json.Unmarshal([]byte(lv.String()), &logs) != nil || logs == nil {
		return []string{}
	}
	return logs
}

func boolValue(iso *v8.Isolate, b bool) *v8.Value {
	v, _ := v8.NewValue(iso, b)
	return v
}

// jsErrorString renders a v8go error as "Name: message".
func jsErrorString(err error) string {
	var je *v8.JSError
	if errors.As(err, &je) {
		return je.Message
	}
	return "Error: " + err.Error()
}

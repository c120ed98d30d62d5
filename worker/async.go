//go:build cgo

package worker

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	v8 "rogchap.com/v8go"

	"github.com/autobox-dev/autobox/worker/proto"
)

// Concurrent fetches. A fetch does not block the isolate: bridgeStartCallback
// sends the request and returns its id at once, and the prelude hands user code a
// promise that the event loop (waitTimer) settles when the reply comes. V8 is not
// thread-safe, so only the isolate's thread ever touches JS: a reader goroutine
// does nothing but move frames from the supervisor's pipe to a channel, and the
// isolate's thread takes them from there.
//
// Until the first fetch, frames are read on the isolate's thread directly, as
// they always were: a call that never fetches pays for no goroutine hand-off.

// asyncState is the fetches of the call. Only the isolate's thread uses it.
type asyncState struct {
	frames   chan *proto.Message // from the reader goroutine; nil until the first fetch
	inflight map[int]bool        // ids sent and not answered
	queued   []*proto.Message    // requests past MaxFetchesInFlight, sent as others finish
	ready    []*proto.Reply      // replies not given to JS yet
}

// startReader starts the goroutine that reads the supervisor's frames. It ends
// with the pipe (the worker exits after its call, and so does the goroutine).
func (w *warm) startReader() {
	if w.async.frames != nil {
		return
	}
	// One frame waits here at most: the others wait in the pipe and in the
	// supervisor, so a worker holds few replies (up to 10 MB each) outside V8.
	ch := make(chan *proto.Message, 1)
	w.async.frames = ch
	go func() {
		defer close(ch)
		for {
			m, err := proto.Read(w.in)
			if err != nil {
				return
			}
			ch <- m
		}
	}()
}

// lostSupervisor ends the worker: without its supervisor the call has no one to
// answer to, and a reply it cannot match means the pipes are out of step.
func lostSupervisor() {
	fmt.Fprintln(os.Stderr, "autobox worker js: lost the supervisor during a bridge call")
	os.Exit(76)
}

// readReply returns the reply to the synchronous request id. Replies to fetches
// that come first are kept for the event loop.
func (w *warm) readReply(id int) *proto.Reply {
	for {
		var m *proto.Message
		if w.async.frames == nil {
			var err error
			if m, err = proto.Read(w.in); err != nil {
				lostSupervisor()
			}
		} else {
			var ok bool
			if m, ok = <-w.async.frames; !ok {
				lostSupervisor()
			}
		}
		if m.Type != proto.TypeReply || m.Reply == nil {
			lostSupervisor()
		}
		if m.Reply.ID == id {
			return m.Reply
		}
		w.receive(m)
	}
}

// receive takes a frame that must be the reply to a fetch in flight, keeps it for
// the event loop, and sends the next queued request in its place.
func (w *warm) receive(m *proto.Message) {
	if m.Type != proto.TypeReply || m.Reply == nil || !w.async.inflight[m.Reply.ID] {
		lostSupervisor()
	}
	delete(w.async.inflight, m.Reply.ID)
	w.async.ready = append(w.async.ready, m.Reply)
	for len(w.async.queued) > 0 && len(w.async.inflight) < proto.MaxFetchesInFlight {
		next := w.async.queued[0]
		w.async.queued = w.async.queued[1:]
		w.send(next)
	}
}

// send writes an asynchronous request and counts it in flight.
func (w *warm) send(m *proto.Message) {
	if err := proto.Write(w.out, m); err != nil {
		lostSupervisor()
	}
	if w.async.inflight == nil {
		w.async.inflight = map[int]bool{}
	}
	w.async.inflight[m.Bridge.ID] = true
}

// bridgeStartCallback is the prelude's bridgeStart(op, args): it sends the
// request (or queues it while MaxFetchesInFlight are unanswered) and returns
// {data: id} at once; the reply settles the promise the prelude made for id.
func (w *warm) bridgeStartCallback(info *v8.FunctionCallbackInfo) *v8.Value {
	req, bad := w.request(info)
	if bad != nil {
		return bad
	}
	w.startReader()
	if len(w.async.inflight) < proto.MaxFetchesInFlight {
		w.send(req)
	} else {
		w.async.queued = append(w.async.queued, req)
	}
	id, _ := json.Marshal(req.Bridge.ID)
	return w.replyValue(id, "")
}

// awaitReply is the channel the event loop waits on for replies: nil (never
// ready) when no fetch is in flight.
func (w *warm) awaitReply() <-chan *proto.Message {
	if len(w.async.inflight) == 0 {
		return nil
	}
	return w.async.frames
}

// settleReady gives every reply received to JS, which settles its promise.
// slept, the time the loop waited before the first one came, moves the JS timer
// clock on. It reports whether there was any.
func (w *warm) settleReady(slept time.Duration) (bool, error) {
	if len(w.async.ready) == 0 {
		return false, nil
	}
	for len(w.async.ready) > 0 {
		r := w.async.ready[0]
		w.async.ready = w.async.ready[1:]
		id, _ := v8.NewValue(w.iso, int32(r.ID))
		ms, _ := v8.NewValue(w.iso, int32(slept/time.Millisecond))
		slept = 0
		if _, err := w.internals.MethodCall("settle", id, w.replyValue(r.Data, r.Error), ms); err != nil {
			return true, err
		}
	}
	return true, nil
}

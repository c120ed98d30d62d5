package jspool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/worker/proto"
)

// Concurrent fetches of one execute_js call. The worker sends fetch requests
// without waiting (worker/proto: up to MaxFetchesInFlight unanswered), and the
// supervisor runs each on a goroutine of its own while the call's conversation
// goes on reading the worker's frames: every fetch is still checked, recorded
// and bounded by b.fetch as before, only no longer one after another. The
// goroutines write their replies to the worker themselves, under the lock that
// every write to the worker takes during the call. When the call ends, however
// it ends, the fetches still running are cancelled and waited for: no goroutine
// and no connection of a call outlives it.

// callFetches is the fetches of one call in flight.
type callFetches struct {
	w      *jsWorker
	b      *bridge
	ctx    context.Context // the call's: cancelled when the call ends
	cancel context.CancelFunc
	wmu    sync.Mutex // serialises writes to the worker
	wg     sync.WaitGroup
	mu     sync.Mutex
	n      int // in flight
}

func newCallFetches(ctx context.Context, w *jsWorker, b *bridge) *callFetches {
	ctx, cancel := context.WithCancel(ctx)
	return &callFetches{w: w, b: b, ctx: ctx, cancel: cancel}
}

// write sends a frame to the worker.
func (f *callFetches) write(m *proto.Message) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return proto.Write(f.w.toW, m)
}

// start runs the fetch req on a goroutine of its own that answers the worker. A
// worker past MaxFetchesInFlight is answered at once with an error.
func (f *callFetches) start(req *proto.Bridge) error {
	f.mu.Lock()
	full := f.n >= proto.MaxFetchesInFlight
	if !full {
		f.n++
	}
	f.mu.Unlock()
	if full {
		id := 0
		if req != nil {
			id = req.ID
		}
		return f.write(&proto.Message{Type: proto.TypeReply, Reply: &proto.Reply{ID: id, Error: fmt.Sprintf("fetch: more than %d requests at once", proto.MaxFetchesInFlight)}})
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		reply := f.b.handle(f.ctx, req)
		f.mu.Lock()
		f.n--
		f.mu.Unlock()
		// A failed write means the worker is gone, which the conversation finds
		// by its own read.
		_ = f.write(&proto.Message{Type: proto.TypeReply, Reply: reply})
	}()
	return nil
}

// end cancels the fetches still running and waits for them. A goroutine can only
// be held by a write to a worker that does not read; the worker exits after its
// result, or has been killed, so a write ends with EPIPE; should one still hang,
// the worker is killed.
func (f *callFetches) end() {
	f.cancel()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(time.Second):
	}
	_ = f.w.proc.Kill()
	<-done
}

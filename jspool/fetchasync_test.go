package jspool

import (
	"context"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/worker/proto"
)

// blockingFetcher holds every request until its context ends.
type blockingFetcher struct{ running, ended atomic.Int32 }

func (f *blockingFetcher) Do(r *http.Request) (*http.Response, error) {
	f.running.Add(1)
	<-r.Context().Done()
	f.ended.Add(1)
	return nil, r.Context().Err()
}

func (f *blockingFetcher) CloseIdleConnections() {}

// TestCallFetchesBound: a worker that ignores the protocol and sends more fetches
// than MaxFetchesInFlight gets the excess refused at once, while those in flight
// go on; ending the call cancels them and waits for every goroutine.
func TestCallFetchesBound(t *testing.T) {
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wr.Close()
	f := &blockingFetcher{}
	b := newBridge(nil, 0, 0, true, time.Now().Add(time.Minute))
	b.fetchClient = f
	w := &jsWorker{toW: wr, proc: &os.Process{}}
	calls := newCallFetches(context.Background(), w, b)
	for i := 1; i <= proto.MaxFetchesInFlight+1; i++ {
		if err := calls.start(&proto.Bridge{ID: i, Op: "fetch", Args: []byte(`{"url":"http://example.com/"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := proto.Read(r)
	if err != nil || m.Reply == nil || m.Reply.ID != proto.MaxFetchesInFlight+1 || !strings.Contains(m.Reply.Error, "more than 8 requests at once") {
		t.Fatalf("the fetch past the bound: %+v %v", m, err)
	}
	for f.running.Load() < proto.MaxFetchesInFlight {
		time.Sleep(time.Millisecond)
	}
	// Replies to the cancelled fetches are written as the call ends: read them.
	go func() {
		for {
			if _, err := proto.Read(r); err != nil {
				return
			}
		}
	}()
	calls.end()
	if n := f.ended.Load(); n != proto.MaxFetchesInFlight {
		t.Errorf("after the call: %d of %d fetches ended", n, proto.MaxFetchesInFlight)
	}
}

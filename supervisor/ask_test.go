package supervisor

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/mcpstdio"
)

// TestAskingDoesNotStallTheWindow: with a request window of 2, three calls beyond
// the ceiling are read and all wait for the user; the client's answers must still
// be read (each waiting call lends its slot back), so every call ends. Without
// the lending, the reader holds the third call waiting for a slot and never reads
// the first answer (on 2025-11-25, the answer to elicitation/create; on
// 2026-07-28, the retry of the call). Once all are answered, no slot is held:
// none was given back twice or taken twice.
func TestAskingDoesNotStallTheWindow(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { askingWindow(t, version) })
	}
}

func askingWindow(t *testing.T, version string) {
	old := mcpstdio.MaxInFlight
	mcpstdio.MaxInFlight = 2
	defer func() { mcpstdio.MaxInFlight = old }()
	s, err := New(Options{Exe: testBin, PoolSize: 1, StateDir: t.TempDir(), noWorkerJail: true,
		Ceiling: &ceiling.Flags{File: t.TempDir() + "/policy.json", Limits: ceiling.Limits{TimeoutMs: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	served := make(chan struct{})
	tr := &mcpstdio.Transport{In: inR, Out: outW}
	go func() {
		defer close(served)
		_ = s.Serve(ctx, tr)
	}()

	const calls = 3
	var sent sync.WaitGroup
	sent.Add(calls)
	var asked atomic.Int32
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if asked.Add(1) == 1 {
				sent.Wait() // every call is on its way before the first answer
				time.Sleep(100 * time.Millisecond)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "once"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	// A stalled server leaves the client's writes blocked: the pipes are closed
	// first, so that a stall fails the test rather than hanging it.
	defer func() { inW.Close(); outR.Close(); cancel(); cs.Close(); <-served }()
	var wg sync.WaitGroup
	for i := 0; i < calls; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent.Done()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_js", Arguments: map[string]any{"code": "6*7", "timeoutMs": 200}})
			if err != nil {
				t.Errorf("call: %v", err)
				return
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if res.IsError {
				t.Errorf("call refused: %s", raw)
			}
		}()
	}
	wg.Wait()
	if n := asked.Load(); n != calls {
		t.Errorf("the user was asked %d times, want %d (once each)", n, calls)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Errorf("protocol %s, want %s", v, version)
	}
	// The last answer's slot is given back right after it is written.
	for held := tr.InFlight(); held != 0; held = tr.InFlight() {
		if ctx.Err() != nil {
			t.Fatalf("%d slots of the window held after every call was answered", held)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package supervisor

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/stdiotest"
	"github.com/autobox-dev/autobox/mcpstdio"
)

// stdioSession serves one session of a fresh server over in-memory pipes.
type stdioSession struct {
	*stdiotest.Pipes
	tr *mcpstdio.Transport
}

func startStdio(t *testing.T, noDirect bool) *stdioSession {
	t.Helper()
	return startStdioWith(t, Options{noDirect: noDirect})
}

// directAnswered counts the calls the transport answered on its direct path.
func (s *stdioSession) directAnswered() int64 {
	d, ok := s.tr.Direct.(*directCalls)
	if !ok {
		return 0
	}
	return d.answered.Load()
}

// sameOnBothPaths runs a session's exchange (run) with the direct path off and
// on: the replies must be the same, and wantDirect calls must have taken the
// direct path when it is on. It returns the direct path's replies.
func sameOnBothPaths(t *testing.T, run func(noDirect bool) ([]string, int64), wantDirect int64) []string {
	t.Helper()
	sdk, n := run(true)
	if n != 0 {
		t.Fatalf("%d calls took the direct path with it off", n)
	}
	direct, n := run(false)
	if n != wantDirect {
		t.Errorf("%d calls took the direct path, want %d", n, wantDirect)
	}
	for i := range sdk {
		if direct[i] != sdk[i] {
			t.Errorf("reply %d differs:\ndirect: %s\nsdk:    %s", i, direct[i], sdk[i])
		}
	}
	return direct
}

// startStdioWith is startStdio with opts (its binary, pool, state dir and
// worker jail set here).
func startStdioWith(t *testing.T, opts Options) *stdioSession {
	t.Helper()
	opts.Exe, opts.PoolSize, opts.StateDir, opts.noWorkerJail = testBin, 1, t.TempDir(), true
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	p := stdiotest.New(t)
	tr := &mcpstdio.Transport{In: p.ServerIn, Out: p.ServerOut}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(ctx, tr)
	}()
	t.Cleanup(func() {
		p.Close()
		cancel()
		<-served
		s.Close()
	})
	return &stdioSession{Pipes: p, tr: tr}
}

// durations matches the durationMs values of results, plain and inside the text
// rendering, which differ from run to run.
var durations = regexp.MustCompile(`(durationMs\\?"):[0-9.e+-]+`)

// TestDirectCallsAnswerAsTheSDK sends the same requests to a session whose tool calls
// take the transport's direct path and to one where the SDK answers everything: the
// replies must be the same, for both protocol generations, tool errors, argument
// errors and calls the direct path leaves to the SDK.
func TestDirectCallsAnswerAsTheSDK(t *testing.T) {
	const caps = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	calls := []string{
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7"}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"execute_js","arguments":{"code":"throw new TypeError('no')"}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1","bogus":1}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"[1,'x',{a:null}]"},"_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"'new'"},"_meta":{` + caps + `}}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1"},"_meta":{` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"copy_then_sync","arguments":{"action":"status","workspaceId":"nope"}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"execute_js"}}`,
		// Left to the SDK by the direct path: unknown tool, unknown protocol version,
		// missing capabilities, other params.
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1"},"task":{}}}`,
		// Envelopes: members in another order, an extra member, an id written as
		// a float (all answered directly); a member name in capitals, null params
		// (the SDK's).
		`{"params":{"name":"execute_js","arguments":{"code":"2"}},"method":"tools/call","id":21,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"3"}},"extra":1}`,
		`{"jsonrpc":"2.0","id":23.0,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"4"}}}`,
		`{"JSONRPC":"2.0","id":24,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"5"}}}`,
		`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":null}`,
	}
	run := func(noDirect bool) ([]string, int64) {
		ss := startStdio(t, noDirect)
		// A call before initialize is the SDK's to refuse.
		ss.Send(calls[0])
		before := ss.Next()
		ss.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		ss.Next()
		ss.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		replies := []string{before}
		for _, c := range calls {
			ss.Send(c)
			replies = append(replies, durations.ReplaceAllString(ss.Next(), "$1:0"))
		}
		return replies, ss.directAnswered()
	}
	direct := sameOnBothPaths(t, run, 11)
	if !strings.Contains(direct[0], "invalid during session initialization") {
		t.Errorf("a call before initialize was answered: %s", direct[0])
	}
	if !strings.Contains(direct[5], `modelcontextprotocol/serverInfo"`) {
		t.Errorf("2026-07-28 call without its annotations: %s", direct[5])
	}
}

// TestDirectCallsCancelAndDuplicateIDs: a direct call is cancelled by
// notifications/cancelled, a second request with the id of one in progress is
// refused (id null), and reading goes on while a call runs.
func TestDirectCallsCancelAndDuplicateIDs(t *testing.T) {
	ss := startStdio(t, false)
	ss.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ss.Next()
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"await new Promise(() => {})","timeoutMs":10000}}}`)
	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1"}}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":null`) || !strings.Contains(l, "already in use") {
		t.Errorf("duplicate id: %s", l)
	}
	ss.Send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if l := ss.Next(); !strings.Contains(l, `"id":6`) {
		t.Errorf("ping during a call: %s", l)
	}
	start := time.Now()
	ss.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"test"}}`)
	l := ss.Next()
	if !strings.Contains(l, `"id":5`) || !strings.Contains(l, "the client cancelled the request: test") {
		t.Errorf("cancelled call: %s", l)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancel took %v", d)
	}
	// Positive control: the same id is free again and an ordinary call succeeds.
	ss.Send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7"}}}`)
	if l := ss.Next(); !strings.Contains(l, `"id":5`) || !strings.Contains(l, `"result\":42`) {
		t.Errorf("call after cancel: %s", l)
	}
	if n := ss.directAnswered(); n != 2 {
		t.Errorf("%d direct calls, want 2", n)
	}
}

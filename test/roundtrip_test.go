package test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asking the user on MCP 2026-07-28 (supervisor/roundtrip.go): the call answers
// input_required with the question, and the client's retry brings the answer.
// Through the Go SDK's client (which negotiates 2026-07-28 with server/discover
// and fulfils input requests with its elicitation handler), and by hand over
// JSON-RPC, to check the wire and what a client may get wrong. The 2025-11-25
// tests of the same questions are elicit_test.go and askreach_test.go.

const newEra = "2026-07-28"

// startNewEra starts a server with args and a Go SDK client on 2026-07-28
// answering as u (nil: a client without elicitation).
func startNewEra(t *testing.T, u *asked, args ...string) *session {
	t.Helper()
	return startNewEraEnv(t, u, nil, args...)
}

func startNewEraEnv(t *testing.T, u *asked, env []string, args ...string) *session {
	t.Helper()
	var opts *mcp.ClientOptions
	if u != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: u.handle}
	}
	s := startClient(t, opts, &mcp.ClientSessionOptions{ProtocolVersion: newEra}, env, append([]string{bin, "serve"}, args...))
	if v := s.cs.InitializeResult().ProtocolVersion; v != newEra {
		t.Fatalf("the client negotiated %s, want %s", v, newEra)
	}
	return s
}

// TestRoundTripAsk: each answer, through multi round-trip requests.
func TestRoundTripAsk(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "once"}
	s := startNewEra(t, u, "--policy", f.policy)
	f.wantRan(t, s, "a")
	q := u.last()
	if !strings.Contains(q.Message, "mount "+f.beyond+" read-write") || q.Mode != "form" {
		t.Errorf("the question: %+v", q)
	}
	if want := `["once","session","always","no"]`; toJSON(q.RequestedSchema.(map[string]any)["properties"].(map[string]any)["answer"].(map[string]any)["enum"]) != want {
		t.Errorf("choices %s, want %s", toJSON(q.RequestedSchema), want)
	}
	u.set("no")
	f.wantRefused(t, s, "b", "the user answered no")
	u.set("decline")
	f.wantRefused(t, s, "c", "the user declined")
	u.set("cancel")
	f.wantRefused(t, s, "d", "the user dismissed the question")
	if u.count() != 4 {
		t.Errorf("asked %d times, want 4", u.count())
	}
	// Positive control: within the ceiling, nobody is asked.
	if o, _ := s.js(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": f.allowed, "sandboxPath": "/mnt/a"}}}); !o.OK || u.count() != 4 {
		t.Errorf("within the ceiling: %+v, asked %d", o, u.count())
	}
	// Session: remembered, not asked again; always: written to the file.
	u.set("session")
	f.wantRan(t, s, "e")
	u.set("no")
	f.wantRan(t, s, "f")
	if u.count() != 5 {
		t.Errorf("asked %d times, want 5", u.count())
	}
	u2 := &asked{answer: "always"}
	s2 := startNewEra(t, u2, "--policy", f.policy)
	if o, _ := s2.js(map[string]any{"code": "1", "timeoutMs": 3000}); !o.OK || u2.count() != 1 {
		t.Errorf("always: %+v, asked %d", o, u2.count())
	}
	if b, _ := os.ReadFile(f.policy); !strings.Contains(string(b), `"timeoutMs": 3000`) {
		t.Errorf("the ceiling file after always: %s", b)
	}
	// A client that declares no elicitation is not asked.
	s3 := startNewEra(t, nil, "--policy", f.policy)
	f.wantRefused(t, s3, "g", "only an MCP client that supports elicitation can ask them")
}

// TestRoundTripLate: the user answers after --ask-timeout, so the client's
// retry comes too late: the call was ended meanwhile (nothing ran), and the
// retry gets what it answered; the server goes on.
func TestRoundTripLate(t *testing.T) {
	f := newAskFixture(t)
	var n int
	late := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		n++
		time.Sleep(3 * time.Second) // past the server's 1s
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "once"}}, nil
	}}
	s := startClient(t, late, &mcp.ClientSessionOptions{ProtocolVersion: newEra}, nil, []string{bin, "serve", "--policy", f.policy, "--ask-timeout", "1s"})
	o, _ := s.js(f.write("a"))
	if o.OK || !strings.Contains(o.err(), "the client did not retry the call with the user's answer within 1s") || f.written("a") || n != 1 {
		t.Errorf("answered late: %+v (asked %d)", o, n)
	}
	if o, _ := s.js(map[string]any{"code": "6*7"}); string(o.Result) != "42" {
		t.Errorf("after: %+v", o)
	}
}

// roundTripMeta is the per-request _meta of a 2026-07-28 client; elicit
// declares elicitation.
func roundTripMeta(elicit bool) string {
	caps := `{}`
	if elicit {
		caps = `{"elicitation":{"form":{}}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// startRawNewEra starts a server with args and discovers it as a 2026-07-28
// client does; it returns the discover result.
func startRawNewEra(t *testing.T, args ...string) (*rawSession, map[string]any) {
	t.Helper()
	r := spawnRaw(t, append([]string{"serve"}, args...), nil)
	r.send(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{` + roundTripMeta(true) + `}}`)
	m := r.reply(0)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("server/discover: %v", m)
	}
	return r, res
}

// rawCall sends tools/call id with the 2026-07-28 _meta and extra params
// (a JSON fragment: requestState, inputResponses), and returns the reply.
func (r *rawSession) rawCall(id int, tool, args string, elicit bool, extra string) map[string]any {
	r.t.Helper()
	if extra != "" {
		extra = "," + extra
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s%s}}`, id, tool, args, roundTripMeta(elicit), extra))
	return r.reply(id)
}

// answerOf is a retry's params answering with action and, for accept, answer.
func answerOf(state, action, answer string) string {
	content := ""
	if action == "accept" {
		content = `,"content":{"answer":"` + answer + `"}`
	}
	return `"requestState":"` + state + `","inputResponses":{"ask":{"action":"` + action + `"` + content + `}}`
}

// inputRequired checks that m is an input_required answer asking one form
// question and returns it and the requestState.
func inputRequired(t *testing.T, what string, m map[string]any) (question map[string]any, state string) {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	if res == nil || res["resultType"] != "input_required" {
		t.Fatalf("%s: want input_required, got %.600v", what, m)
	}
	reqs, _ := res["inputRequests"].(map[string]any)
	ask, _ := reqs["ask"].(map[string]any)
	state, _ = res["requestState"].(string)
	if len(reqs) != 1 || ask["method"] != "elicitation/create" || state == "" || res["structuredContent"] != nil {
		t.Fatalf("%s: the input_required answer: %v", what, res)
	}
	q, _ := ask["params"].(map[string]any)
	if q["mode"] != "form" || q["requestedSchema"] == nil {
		t.Fatalf("%s: the question: %v", what, q)
	}
	return q, state
}

// complete checks that m is a complete tool result of a 2026-07-28 server and
// returns its structured content.
func complete(t *testing.T, what string, m map[string]any) map[string]any {
	t.Helper()
	res, _ := m["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
	if res == nil || res["resultType"] != "complete" || info["name"] != "autobox" {
		t.Fatalf("%s: want a complete result with serverInfo, got %.600v", what, m)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

// TestRoundTripWire: server/discover, per-request _meta, and the exchange of a
// question on the wire, with what a client may do wrong: retry without the
// answer (asked again), with other arguments, with a requestState that names
// nothing or was used already (JSON-RPC errors); a client that declares no
// elicitation is refused unasked.
func TestRoundTripWire(t *testing.T) {
	policy := writePolicy(t, `{"limits": {"timeoutMs": 2000}}`)
	r, disc := startRawNewEra(t, "--policy", policy)
	versions := toJSON(disc["supportedVersions"])
	meta, _ := disc["_meta"].(map[string]any)
	info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
	caps, _ := disc["capabilities"].(map[string]any)
	if !strings.Contains(versions, `"2026-07-28"`) || !strings.Contains(versions, `"2025-11-25"`) || info["name"] != "autobox" || caps["tools"] == nil || disc["instructions"] == nil {
		t.Errorf("server/discover: %v", disc)
	}
	// Per-request _meta: every result says who answered; initialize does not
	// exist in this protocol; a request naming a protocol the server does not
	// speak is refused saying which it does.
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + roundTripMeta(true) + `}}`)
	if m := r.reply(1); !strings.Contains(toJSON(m), `"name":"execute_js"`) || !strings.Contains(toJSON(m), `"io.modelcontextprotocol/serverInfo"`) {
		t.Errorf("tools/list: %.400v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"raw","version":"1"},` + roundTripMeta(true) + `}}`)
	if m := r.reply(2); m["error"] == nil {
		t.Errorf("initialize on 2026-07-28: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := r.reply(3); errCode(m) != -32022 || !strings.Contains(toJSON(m), `"2026-07-28"`) {
		t.Errorf("an unknown protocol version: %v", m)
	}

	// Within the ceiling: a plain complete result.
	if sc := complete(t, "within the ceiling", r.rawCall(4, "execute_js", `{"code":"6*7"}`, true, "")); sc["result"] != float64(42) {
		t.Errorf("within the ceiling: %v", sc)
	}
	beyond := `{"code":"6*7","timeoutMs":3000}`
	// An answer sent with a first request answers nothing: no question was
	// asked, and the call asks its own.
	_, advance := inputRequired(t, "answered in advance", r.rawCall(50, "execute_js", beyond, true, `"inputResponses":{"ask":{"action":"accept","content":{"answer":"always"}}}`))
	if sc := complete(t, "answered in advance", r.rawCall(51, "execute_js", beyond, true, answerOf(advance, "decline", ""))); !strings.Contains(fmt.Sprint(sc["error"]), "the user declined") {
		t.Errorf("answered in advance, then declined: %v", sc)
	}
	// Beyond it: the question, as the call's answer.
	q, state := inputRequired(t, "beyond the ceiling", r.rawCall(5, "execute_js", beyond, true, ""))
	if !strings.Contains(fmt.Sprint(q["message"]), "timeoutMs 3000ms (your ceiling: 2000ms)") {
		t.Errorf("the question: %v", q)
	}
	// A retry without the answer is asked the same question again.
	if q2, state2 := inputRequired(t, "retried without the answer", r.rawCall(6, "execute_js", beyond, true, `"requestState":"`+state+`"`)); state2 != state || q2["message"] != q["message"] {
		t.Errorf("asked again: %v %s", q2, state2)
	}
	// A retry must repeat the call.
	if m := r.rawCall(7, "execute_js", `{"code":"6*7","timeoutMs":3001}`, true, answerOf(state, "accept", "once")); errCode(m) != -32602 || !strings.Contains(toJSON(m), "must repeat its tool name and arguments") {
		t.Errorf("a retry with other arguments: %v", m)
	}
	if m := r.rawCall(8, "exec_command", beyond, true, answerOf(state, "accept", "once")); errCode(m) != -32602 {
		t.Errorf("a retry naming another tool: %v", m)
	}
	if m := r.rawCall(9, "execute_js", beyond, true, answerOf("forged", "accept", "once")); errCode(m) != -32602 || !strings.Contains(toJSON(m), "requestState names no question") {
		t.Errorf("a forged requestState: %v", m)
	}
	// The answer: the call runs, and answers the retry.
	if sc := complete(t, "answered once", r.rawCall(10, "execute_js", beyond, true, answerOf(state, "accept", "once"))); sc["result"] != float64(42) {
		t.Errorf("answered once: %v", sc)
	}
	// A requestState is used once.
	if m := r.rawCall(11, "execute_js", beyond, true, answerOf(state, "accept", "once")); errCode(m) != -32602 {
		t.Errorf("a used requestState: %v", m)
	}
	// The other answers.
	for i, c := range []struct{ action, answer, why string }{
		{"accept", "no", "the user answered no"},
		{"decline", "", "the user declined"},
		{"cancel", "", "the user dismissed the question"},
		{"accept", "maybe", "the user answered no"}, // not a choice: allows nothing
	} {
		_, state := inputRequired(t, c.why, r.rawCall(20+2*i, "execute_js", beyond, true, ""))
		sc := complete(t, c.why, r.rawCall(21+2*i, "execute_js", beyond, true, answerOf(state, c.action, c.answer)))
		if sc["ok"] != false || !strings.Contains(fmt.Sprint(sc["error"]), c.why) || !strings.Contains(fmt.Sprint(sc["error"]), `"limits.timeoutMs" rule`) {
			t.Errorf("%s: %v", c.why, sc)
		}
	}
	// A client that declares no elicitation gets the refusal, unasked.
	if sc := complete(t, "no elicitation", r.rawCall(40, "execute_js", beyond, false, "")); !strings.Contains(fmt.Sprint(sc["error"]), "only an MCP client that supports elicitation can ask them") {
		t.Errorf("no elicitation: %v", sc)
	}
	r.send(`{"jsonrpc":"2.0","id":41,"method":"tools/list","params":{` + roundTripMeta(true) + `}}`)
	if m := r.reply(41); m["result"] == nil {
		t.Errorf("after: %v", m)
	}
}

// TestRoundTripDirectAsSDK: the stdio transport answers plain calls itself
// (its direct path); a call that asks answers input_required there as the SDK
// does (the retry is the SDK's to answer): same fields, same resultType.
func TestRoundTripDirectAsSDK(t *testing.T) {
	r, _ := startRawNewEra(t, "--policy", writePolicy(t, `{"limits": {"timeoutMs": 2000}}`))
	beyond := `{"code":"1","timeoutMs":3000}`
	// The first request of a call takes the direct path; one with a field the
	// direct path leaves to the SDK (inputResponses, here answering nothing)
	// the SDK's.
	// (One question at a time: each is answered before the next call asks.)
	direct := r.rawCall(1, "execute_js", beyond, true, "")
	_, state := inputRequired(t, "direct", direct)
	complete(t, "answered", r.rawCall(2, "execute_js", beyond, true, answerOf(state, "accept", "once")))
	sdk := r.rawCall(3, "execute_js", beyond, true, `"inputResponses":{}`)
	_, sdkState := inputRequired(t, "sdk", sdk)
	complete(t, "answered", r.rawCall(4, "execute_js", beyond, true, answerOf(sdkState, "accept", "once")))
	norm := func(m map[string]any, state string) string {
		return strings.ReplaceAll(toJSON(m["result"]), state, "STATE")
	}
	if a, b := norm(direct, state), norm(sdk, sdkState); a != b {
		t.Errorf("input_required differs:\ndirect: %s\nsdk:    %s", a, b)
	}
}

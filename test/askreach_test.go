//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asking the user about a host a running command wants (supervisor/askreach.go):
// a command whose call lists one local server (listed) fetches another (other)
// with curl; the proxy holds the connection while the Go SDK client's
// elicitation handler answers. The request gets through only when the user
// said yes; every refusal reaches the command as the proxy's advice.

type reachFixture struct {
	listed, other string // 127.0.0.1:port of each server
	otherPort     string
	policy        string
}

// newReachFixture serves listed and other; policy is the ceiling file's text,
// LISTED standing for the listed server.
func newReachFixture(t *testing.T, policy string) *reachFixture {
	t.Helper()
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("allowHosts needs a network namespace for the command, which mode %s lacks", hostMode())
	}
	serve := func(body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	f := &reachFixture{listed: serve("listed"), other: serve("other")}
	_, f.otherPort, _ = net.SplitHostPort(f.other)
	f.policy = writePolicy(t, strings.ReplaceAll(policy, "LISTED", f.listed))
	return f
}

// start starts a server with the fixture's ceiling file and a client answering
// as u (nil: a client without elicitation).
func (f *reachFixture) start(t *testing.T, u *asked, args ...string) *session {
	t.Helper()
	return f.startEnv(t, u, nil, args...)
}

// startEnv is start with env added to the server's environment.
func (f *reachFixture) startEnv(t *testing.T, u *asked, env []string, args ...string) *session {
	t.Helper()
	var opts *mcp.ClientOptions
	if u != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: u.handle}
	}
	return startClient(t, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, env,
		append([]string{bin, "serve", "--policy", f.policy}, args...))
}

// curl runs script (curl against the fixture's servers: $LISTED, $OTHER) with
// only the listed server in allowHosts, unless hosts says otherwise.
func (f *reachFixture) curl(t *testing.T, s *session, script string, extra map[string]any) netOut {
	t.Helper()
	args := map[string]any{"command": bash(script), "allowHosts": []string{f.listed}, "timeoutMs": 30000,
		"env": []string{"LISTED=http://" + f.listed + "/", "OTHER=http://" + f.other + "/"}}
	for k, v := range extra {
		args[k] = v
	}
	var o netOut
	s.call("exec_command", args, &o)
	return o
}

// wantReached checks that the command printed other's body.
func wantReached(t *testing.T, what string, o netOut) {
	t.Helper()
	if o.code() != 0 || o.Stdout != "other" {
		t.Errorf("%s: want the other server reached, got exit %d stdout %q stderr %q", what, o.code(), o.Stdout, o.Stderr)
	}
}

// wantAdvice checks that the command saw the proxy's denial, saying why.
func (f *reachFixture) wantAdvice(t *testing.T, what string, o netOut, why string) {
	t.Helper()
	want := "autobox: connection to " + f.other + " denied: port " + f.otherPort + " not allowed"
	if o.code() != 0 || !strings.Contains(o.Stdout, want) || !strings.Contains(o.Stdout, why) || !strings.Contains(o.Stdout, `allowHosts needs "127.0.0.1:`+f.otherPort+`"`) {
		t.Errorf("%s: want the denial (%s), got exit %d stdout %q stderr %q", what, why, o.code(), o.Stdout, o.Stderr)
	}
	if !strings.Contains(o.denied("127.0.0.1", atoi(f.otherPort)), why) {
		t.Errorf("%s: the record: %+v", what, o.Network)
	}
}

func TestAskReachOnce(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "once"}
	s := f.start(t, u)
	// Two requests to the target in one call: one question.
	wantReached(t, "allowed once", f.curl(t, s, `curl -sS "$OTHER" && curl -sS -o /dev/null "$OTHER"`, nil))
	if u.count() != 1 {
		t.Fatalf("asked %d times, want 1", u.count())
	}
	q := u.last()
	if !strings.Contains(q.Message, "Let this command (/bin/bash --noprofile --norc -c curl") || !strings.Contains(q.Message, "reach "+f.other+"?") ||
		strings.Contains(q.Message, "beyond your autobox ceiling") || !strings.Contains(q.Message, "always: added to "+f.policy) {
		t.Errorf("the question: %q", q.Message)
	}
	// Once is this call only: the next is asked again, and "no" refuses it.
	u.set("no")
	f.wantAdvice(t, "refused", f.curl(t, s, `curl -sS "$OTHER"`, nil), "the user answered no")
	if u.count() != 2 {
		t.Errorf("asked %d times, want 2", u.count())
	}
	// Positive control: the listed server, nobody asked.
	if o := f.curl(t, s, `curl -sS "$LISTED"`, nil); o.Stdout != "listed" || u.count() != 2 {
		t.Errorf("listed: %+v, asked %d", o, u.count())
	}
}

func TestAskReachSession(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "session"}
	s := f.start(t, u)
	wantReached(t, "allowed for the session", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	u.set("no")
	wantReached(t, "remembered", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	if u.count() != 1 {
		t.Errorf("asked %d times, want 1", u.count())
	}
	if b, _ := os.ReadFile(f.policy); strings.Contains(string(b), f.other) {
		t.Errorf("a session answer was written to the file: %s", b)
	}
}

func TestAskReachAlways(t *testing.T) {
	f := newReachFixture(t, `{"limits": {"timeoutMs": 60000}}`)
	u := &asked{answer: "always"}
	s := f.start(t, u)
	wantReached(t, "allowed always", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	var file struct {
		AlwaysReach []string
		Limits      map[string]int
	}
	b, _ := os.ReadFile(f.policy)
	if err := json.Unmarshal(b, &file); err != nil || len(file.AlwaysReach) != 1 || file.AlwaysReach[0] != f.other || file.Limits["timeoutMs"] != 60000 {
		t.Errorf("the ceiling file after always: %s %v", b, err)
	}
	// Another server, whose client cannot ask, reads it.
	s2 := f.start(t, nil)
	wantReached(t, "a new server", f.curl(t, s2, `curl -sS "$OTHER"`, nil))
}

// TestAskReachBeyondCeiling: a host beyond the ceiling's allowHosts is asked
// about as such, and "always" widens that rule too.
func TestAskReachBeyondCeiling(t *testing.T) {
	f := newReachFixture(t, `{"allowHosts": ["LISTED"]}`)
	u := &asked{answer: "always"}
	s := f.start(t, u)
	wantReached(t, "allowed always", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	if m := u.last().Message; !strings.Contains(m, "beyond your autobox ceiling ("+f.policy+")") {
		t.Errorf("the question: %q", m)
	}
	var file struct{ AllowHosts, AlwaysReach []string }
	b, _ := os.ReadFile(f.policy)
	if err := json.Unmarshal(b, &file); err != nil || len(file.AllowHosts) != 2 || file.AllowHosts[1] != f.other || len(file.AlwaysReach) != 1 {
		t.Errorf("the ceiling file after always: %s %v", b, err)
	}
	// A rule set by a flag: "always" is not offered.
	u2 := &asked{answer: "once"}
	s2 := startClient(t, &mcp.ClientOptions{ElicitationHandler: u2.handle}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, nil,
		[]string{bin, "serve", "--policy", writePolicy(t, `{}`), "--ceiling-host", f.listed})
	wantReached(t, "allowed once", f.curl(t, s2, `curl -sS "$OTHER"`, nil))
	if strings.Contains(toJSON(u2.last().RequestedSchema), "always") {
		t.Errorf("always offered for a flag's rule: %s", toJSON(u2.last().RequestedSchema))
	}
}

func TestAskReachDeclined(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "decline"}
	s := f.start(t, u)
	f.wantAdvice(t, "declined", f.curl(t, s, `curl -sS "$OTHER"`, nil), "the user declined")
	u.set("cancel")
	f.wantAdvice(t, "dismissed", f.curl(t, s, `curl -sS "$OTHER"`, nil), "the user dismissed the question")
}

// TestAskReachTimeout: no answer in time denies; the command's own timeoutMs,
// shorter than the wait, did not kill it meanwhile (its clock stops while the
// user is asked), and runs again after.
func TestAskReachTimeout(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "wait"}
	s := f.start(t, u, "--ask-timeout", "3s")
	short := map[string]any{"timeoutMs": 1500}
	o := f.curl(t, s, `curl -sS "$OTHER"`, short)
	f.wantAdvice(t, "unanswered", o, "the user did not answer within 3s")
	if o.Killed {
		t.Errorf("killed while the user was asked: %+v", o)
	}
	// The clock runs again once the question is over: past timeoutMs, killed.
	if o := f.curl(t, s, `curl -sS -o /dev/null "$OTHER"; sleep 5`, short); !o.Killed || !strings.Contains(o.Stderr, "timeout after 1500ms") {
		t.Errorf("after the question: %+v", o)
	}
	// Positive control: the same request, listed, within timeoutMs.
	if o := f.curl(t, s, `curl -sS "$OTHER"`, map[string]any{"timeoutMs": 1500, "allowHosts": []string{f.other}}); o.Stdout != "other" {
		t.Errorf("listed: %+v", o)
	}
}

// TestAskReachNoElicitation: a client that cannot be asked gets today's denial,
// unasked. (On the newest protocol: roundtripreach_test.go.)
func TestAskReachNoElicitation(t *testing.T) {
	f := newReachFixture(t, `{}`)
	s := f.start(t, nil)
	o := f.curl(t, s, `curl -sS "$OTHER"`, nil)
	if r := o.denied("127.0.0.1", atoi(f.otherPort)); r != "port "+f.otherPort+" not allowed" {
		t.Errorf("without elicitation: %q, %+v", r, o)
	}
}

// TestAskReachCap: a command that keeps wanting new hosts gets at most
// proxy.MaxQuestions (4) questions; the rest are denied unasked, saying so.
func TestAskReachCap(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "no"}
	s := f.start(t, u)
	o := f.curl(t, s, `for p in 1 2 3 4 5 6; do curl -sS -o /dev/null "http://127.0.0.1:$p/"; curl -sS -o /dev/null "http://127.0.0.1:$p/"; done`, nil)
	if u.count() != 4 {
		t.Errorf("asked %d times, want 4", u.count())
	}
	if r := o.denied("127.0.0.1", 6); !strings.Contains(r, "this call already asked 4 questions") {
		t.Errorf("the sixth target: %q (%+v)", r, o.Network)
	}
	if r := o.denied("127.0.0.1", 1); !strings.Contains(r, "the user answered no") {
		t.Errorf("the first target: %q", r)
	}
}

// TestAskReachJS: execute_js's fetch is asked about the same way.
func TestAskReachJS(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "once"}
	s := f.start(t, u)
	code := `const r = await fetch("http://` + f.other + `/"); await r.text()`
	o, _ := s.js(map[string]any{"code": code, "allowHosts": []string{f.listed}})
	if !o.OK || string(o.Result) != `"other"` || u.count() != 1 || !strings.Contains(u.last().Message, "Let this JavaScript call (execute_js) reach "+f.other+"?") {
		t.Errorf("fetch allowed once: %+v, asked %d", o, u.count())
	}
	u.set("no")
	o, _ = s.js(map[string]any{"code": code, "allowHosts": []string{f.listed}})
	if o.OK || !strings.Contains(o.err(), "the user answered no") {
		t.Errorf("fetch refused: %+v", o)
	}
}

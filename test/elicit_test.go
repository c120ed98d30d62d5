package test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asking the user (supervisor/ask.go) through the Go SDK client's elicitation
// handler: each answer, a decline, no answer in time, and clients that cannot
// be asked. The call beyond the ceiling writes a file through a read-write
// mount the ceiling does not allow: the file is there only when the user said
// yes.

// asked is an elicitation handler that answers as told and keeps the questions.
type asked struct {
	mu        sync.Mutex
	answer    string // once, session, always, no; "decline", "cancel"; "wait": never answer
	questions []*mcp.ElicitParams
}

func (u *asked) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	u.questions = append(u.questions, req.Params)
	answer := u.answer
	u.mu.Unlock()
	switch answer {
	case "decline", "cancel":
		return &mcp.ElicitResult{Action: answer}, nil
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
}

func (u *asked) set(answer string) {
	u.mu.Lock()
	u.answer = answer
	u.mu.Unlock()
}

func (u *asked) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.questions)
}

func (u *asked) last() *mcp.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.questions[len(u.questions)-1]
}

// startAsking starts a server with args, and a client on protocol 2025-11-25
// (the newest on which a server may send requests) with u as its elicitation
// handler (nil: a client without elicitation).
func startAsking(t *testing.T, u *asked, args ...string) *session {
	t.Helper()
	var opts *mcp.ClientOptions
	if u != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: u.handle}
	}
	return startClient(t, opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, nil, append([]string{bin, "serve"}, args...))
}

// askFixture is a ceiling file that allows mounting allowed read-only, and a
// directory beyond it.
type askFixture struct {
	policy, allowed, beyond string
}

func newAskFixture(t *testing.T) askFixture {
	f := askFixture{allowed: t.TempDir(), beyond: t.TempDir()}
	f.policy = writePolicy(t, `{"mounts": [{"path": "`+f.allowed+`", "mode": "ro"}], "limits": {"timeoutMs": 2000}}`)
	return f
}

// write is the call beyond the ceiling: it writes name into f.beyond.
func (f askFixture) write(name string) map[string]any {
	return map[string]any{"code": `host.writeFile("/mnt/b/` + name + `", "x"); "written"`,
		"mounts": []map[string]any{{"hostPath": f.beyond, "sandboxPath": "/mnt/b", "mode": "rw"}}}
}

func (f askFixture) written(name string) bool {
	_, err := os.Stat(filepath.Join(f.beyond, name))
	return err == nil
}

// wantRefused checks a refused call's text and that it wrote nothing.
func (f askFixture) wantRefused(t *testing.T, s *session, name, why string) {
	t.Helper()
	o, _ := s.js(f.write(name))
	if o.OK || !strings.Contains(o.err(), `"mounts" rule`) || !strings.Contains(o.err(), why) {
		t.Errorf("want refused (%s), got %s", why, o.err())
	}
	if f.written(name) {
		t.Errorf("the refused call wrote %s", name)
	}
}

func (f askFixture) wantRan(t *testing.T, s *session, name string) {
	t.Helper()
	if o, _ := s.js(f.write(name)); !o.OK || !f.written(name) {
		t.Errorf("want the call to run, got %+v", o)
	}
}

func TestAskOnce(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "once"}
	s := startAsking(t, u, "--policy", f.policy)
	f.wantRan(t, s, "a")
	q := u.last()
	if !strings.Contains(q.Message, "mount "+f.beyond+" read-write") || !strings.Contains(q.Message, f.policy) {
		t.Errorf("the question: %q", q.Message)
	}
	choices := q.RequestedSchema.(map[string]any)["properties"].(map[string]any)["answer"].(map[string]any)["enum"]
	if want := `["once","session","always","no"]`; toJSON(choices) != want {
		t.Errorf("choices %v, want %s", choices, want)
	}
	// Once is this call only: the next is asked again, and "no" refuses it.
	u.set("no")
	f.wantRefused(t, s, "b", "the user answered no")
	if u.count() != 2 {
		t.Errorf("asked %d times, want 2", u.count())
	}
	// Positive control: within the ceiling, nobody is asked.
	if o, _ := s.js(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": f.allowed, "sandboxPath": "/mnt/a"}}}); !o.OK || u.count() != 2 {
		t.Errorf("within the ceiling: %+v, asked %d", o, u.count())
	}
	// A call beyond two rules: one question names both.
	u.set("once")
	args := f.write("c")
	args["timeoutMs"] = 3000
	if o, _ := s.js(args); !o.OK || u.count() != 3 {
		t.Errorf("beyond two rules: %+v, asked %d", o, u.count())
	}
	if m := u.last().Message; !strings.Contains(m, "do all of this?") || !strings.Contains(m, "mount "+f.beyond) || !strings.Contains(m, "timeoutMs 3000ms") {
		t.Errorf("the question: %q", m)
	}
}

func TestAskSession(t *testing.T) {
	requireSandbox(t)
	f := newAskFixture(t)
	u := &asked{answer: "session"}
	s := startAsking(t, u, "--policy", f.policy)
	f.wantRan(t, s, "a")
	u.set("no")
	f.wantRan(t, s, "b") // remembered: not asked again
	if u.count() != 1 {
		t.Errorf("asked %d times, want 1", u.count())
	}
	// exec_command too, through a limit: timeoutMs past the ceiling.
	u.set("session")
	if o, _ := s.exec(map[string]any{"command": []string{"true"}, "timeoutMs": 5000}); o.code() != 0 {
		t.Errorf("exec_command allowed for the session: %+v", o)
	}
	if o, _ := s.exec(map[string]any{"command": []string{"true"}, "timeoutMs": 5000}); o.code() != 0 || u.count() != 2 {
		t.Errorf("exec_command again: %+v, asked %d", o, u.count())
	}
	if !strings.Contains(u.last().Message, "timeoutMs 5000ms (your ceiling: 2000ms)") || !strings.Contains(u.last().Message, "this command (true)") {
		t.Errorf("the question: %q", u.last().Message)
	}
	// Session only: the file is unchanged, and another server asks again.
	if b, _ := os.ReadFile(f.policy); strings.Contains(string(b), f.beyond) {
		t.Errorf("session answer written to the file: %s", b)
	}
	s2 := startAsking(t, nil, "--policy", f.policy)
	f.wantRefused(t, s2, "c", "the user was not asked")
}

func TestAskAlways(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "always"}
	s := startAsking(t, u, "--policy", f.policy)
	f.wantRan(t, s, "a")
	b, err := os.ReadFile(f.policy)
	if err != nil || !strings.Contains(string(b), f.beyond) || !strings.Contains(string(b), f.allowed) || !strings.Contains(string(b), `"timeoutMs": 2000`) {
		t.Errorf("the ceiling file after always: %s %v", b, err)
	}
	// Another server, whose client cannot ask, reads it.
	s2 := startAsking(t, nil, "--policy", f.policy)
	f.wantRan(t, s2, "b")
	// A rule set by a flag cannot be changed by "always": it is not offered.
	u3 := &asked{answer: "always"}
	s3 := startAsking(t, u3, "--policy", f.policy, "--mountable", f.allowed+":ro")
	f.wantRefused(t, s3, "c", "does not equal any of: [once session no]")
	if strings.Contains(toJSON(u3.last().RequestedSchema), "always") {
		t.Errorf("always offered for a flag's rule: %s", toJSON(u3.last().RequestedSchema))
	}
}

func TestAskDeclined(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "decline"}
	s := startAsking(t, u, "--policy", f.policy)
	f.wantRefused(t, s, "a", "the user declined")
	u.set("cancel")
	f.wantRefused(t, s, "b", "the user dismissed the question")
}

func TestAskTimeout(t *testing.T) {
	f := newAskFixture(t)
	u := &asked{answer: "wait"}
	s := startAsking(t, u, "--policy", f.policy, "--ask-timeout", "1s")
	f.wantRefused(t, s, "a", "the user did not answer within 1s")
	// The server goes on: a call within the ceiling runs.
	if o, _ := s.js(map[string]any{"code": "1"}); !o.OK {
		t.Errorf("after the timeout: %+v", o)
	}
}

// TestAskNoElicitation: a client that did not declare elicitation gets the
// refusal; the model cannot answer for the user. (A client on the newest
// protocol, where a server sends no requests of its own, is asked through
// multi round-trip requests: roundtrip_test.go.)
func TestAskNoElicitation(t *testing.T) {
	f := newAskFixture(t)
	s := startAsking(t, nil, "--policy", f.policy)
	f.wantRefused(t, s, "a", "only an MCP client that supports elicitation can ask them")
	// Nothing in the arguments stands for an answer: an unknown field is refused.
	args := f.write("c")
	args["answer"] = "always"
	if o, _ := s.js(args); o.OK || f.written("c") {
		t.Errorf("an answer in the arguments: %+v", o)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

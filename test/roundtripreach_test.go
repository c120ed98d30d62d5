//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A question mid-command on MCP 2026-07-28: the command's connection to a host
// its allowHosts does not list is held, the call answers input_required, and
// the client's retry brings the answer and gets the command's result
// (supervisor/roundtrip.go, askreach.go). Fixtures: askreach_test.go.

// TestRoundTripAskReach: through the Go SDK client, each answer; two requests
// to the target make one question; execute_js's fetch is asked about too.
func TestRoundTripAskReach(t *testing.T) {
	f := newReachFixture(t, `{}`)
	u := &asked{answer: "once"}
	s := startNewEra(t, u, "--policy", f.policy)
	wantReached(t, "allowed once", f.curl(t, s, `curl -sS "$OTHER" && curl -sS -o /dev/null "$OTHER"`, nil))
	if u.count() != 1 || !strings.Contains(u.last().Message, "Let this command (/bin/bash --noprofile --norc -c curl") || !strings.Contains(u.last().Message, "reach "+f.other+"?") {
		t.Fatalf("asked %d times: %+v", u.count(), u.last())
	}
	u.set("no")
	f.wantAdvice(t, "refused", f.curl(t, s, `curl -sS "$OTHER"`, nil), "the user answered no")
	u.set("session")
	wantReached(t, "allowed for the session", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	u.set("no")
	wantReached(t, "remembered", f.curl(t, s, `curl -sS "$OTHER"`, nil))
	if u.count() != 3 {
		t.Errorf("asked %d times, want 3", u.count())
	}
	// Positive control: the listed server, nobody asked.
	if o := f.curl(t, s, `curl -sS "$LISTED"`, nil); o.Stdout != "listed" || u.count() != 3 {
		t.Errorf("listed: %+v, asked %d", o, u.count())
	}

	s2 := startNewEra(t, u, "--policy", f.policy)
	u.set("once")
	code := `const r = await fetch("http://` + f.other + `/"); await r.text()`
	if o, _ := s2.js(map[string]any{"code": code, "allowHosts": []string{f.listed}}); !o.OK || string(o.Result) != `"other"` || u.count() != 4 {
		t.Errorf("fetch allowed once: %+v, asked %d", o, u.count())
	}
	// A client that declares no elicitation: denied unasked.
	s3 := startNewEra(t, nil, "--policy", f.policy)
	if o := f.curl(t, s3, `curl -sS "$OTHER"`, nil); o.denied("127.0.0.1", atoi(f.otherPort)) != "port "+f.otherPort+" not allowed" {
		t.Errorf("without elicitation: %+v", o)
	}
}

// TestRoundTripMidCommandWire: by hand, the command waits while its question
// is out; the retry resumes it and gets its output; the retry, cancelled,
// ends the command (it took the first request's place); and a command whose
// question gets no retry within --ask-timeout is ended, the late retry getting
// what it answered.
func TestRoundTripMidCommandWire(t *testing.T) {
	f := newReachFixture(t, `{}`)
	// A retry comes as soon as the test sends it, but a loaded machine may take
	// seconds to read it: the question lapses only where that is the point.
	r, _ := startRawNewEra(t, "--policy", f.policy, "--ask-timeout", "60s")
	call := func(script string) string {
		args, _ := json.Marshal(map[string]any{"command": bash(script), "allowHosts": []string{f.listed}, "timeoutMs": 30000,
			"env": []string{"OTHER=http://" + f.other + "/"}})
		return string(args)
	}
	// Answered: the command goes on with the connection.
	resumed := call(`curl -sS "$OTHER"; echo " resumed"`)
	q, state := inputRequired(t, "mid-command", r.rawCall(1, "exec_command", resumed, true, ""))
	if !strings.Contains(fmt.Sprint(q["message"]), "reach "+f.other+"?") {
		t.Errorf("the question: %v", q)
	}
	if sc := complete(t, "resumed", r.rawCall(2, "exec_command", resumed, true, answerOf(state, "accept", "once"))); sc["stdout"] != "other resumed\n" || sc["exitCode"] != float64(0) {
		t.Errorf("resumed: %v", sc)
	}

	// The retry cancelled: the command it waits for is ended.
	secs := uniqueSeconds(28)
	// (The shell's own command line must not name the sleep that shows the
	// connection was allowed: the time is in a variable.)
	cancelled := call(`s=` + secs + `; curl -sS "$OTHER" && sleep $s`)
	_, state = inputRequired(t, "to cancel", r.rawCall(3, "exec_command", cancelled, true, ""))
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"exec_command","arguments":%s,%s,%s}}`, cancelled, roundTripMeta(true), answerOf(state, "accept", "once")))
	waitProcs(t, "sleep "+secs, true)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"test"}}`)
	if m := r.reply(4); !strings.Contains(toJSON(m), "killed: call cancelled") {
		t.Errorf("the retry cancelled: %v", m)
	}
	if pids := findProcs("sleep " + secs); len(pids) > 0 {
		t.Errorf("the command of a cancelled retry runs on: %v", pids)
	}

	// No retry: the command, still waiting for its connection (curl, asking
	// for it, is there while the question is out), is ended when the question
	// lapses; a retry that comes later gets its result. (Were the command not
	// ended, curl would be denied and the sleep would run on.) Nothing runs
	// after curl: the proxy gives the connection no answer once the call is
	// ending, so the command cannot go on before the kill reaches it.
	r, _ = startRawNewEra(t, "--policy", f.policy, "--ask-timeout", "2s")
	secs = uniqueSeconds(29)
	after := t.TempDir()
	abandonedArgs, _ := json.Marshal(map[string]any{"command": bash(`curl -sS "$OTHER/abandoned"; echo ran-on > /mnt/after/ran; sleep ` + secs),
		"allowHosts": []string{f.listed}, "timeoutMs": 30000, "env": []string{"OTHER=http://" + f.other + "/"},
		"mounts": []map[string]any{{"hostPath": after, "sandboxPath": "/mnt/after", "mode": "rw"}}})
	abandoned := string(abandonedArgs)
	_, state = inputRequired(t, "abandoned", r.rawCall(5, "exec_command", abandoned, true, ""))
	waitProcs(t, "/abandoned", false)
	m := r.rawCall(6, "exec_command", abandoned, true, answerOf(state, "accept", "once"))
	sc := complete(t, "late retry", m)
	if sc["killed"] != true || !strings.Contains(fmt.Sprint(sc["stderr"]), "killed: call cancelled") {
		t.Errorf("the late retry: %v", sc)
	}
	if pids := findProcs("sleep " + secs); len(pids) > 0 {
		t.Errorf("the command of an abandoned question runs on: %v", pids)
	}
	if _, err := os.Stat(filepath.Join(after, "ran")); err == nil {
		t.Error("the command of an abandoned question ran on after its connection")
	}
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + roundTripMeta(true) + `}}`)
	if m := r.reply(7); m["result"] == nil {
		t.Errorf("after: %v", m)
	}
}

// TestRoundTripClientGone: a client that goes away (stdin closed) while a
// command waits for the answer to its question ends the session: the server
// exits and the command, still waiting, is killed.
func TestRoundTripClientGone(t *testing.T) {
	f := newReachFixture(t, `{}`)
	r, _ := startRawNewEra(t, "--policy", f.policy)
	secs := uniqueSeconds(27)
	args, _ := json.Marshal(map[string]any{"command": bash(`curl -sS "$OTHER/gone-` + secs + `"; sleep ` + secs), "allowHosts": []string{f.listed}, "timeoutMs": 30000,
		"env": []string{"OTHER=http://" + f.other + "/"}})
	inputRequired(t, "mid-command", r.rawCall(1, "exec_command", string(args), true, ""))
	waitProcs(t, "/gone-"+secs, true)
	r.in.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit within 30s of its client going away")
	}
	waitProcs(t, "/gone-"+secs, false)
	if pids := findProcs("sleep " + secs); len(pids) > 0 {
		t.Errorf("the command runs on: %v", pids)
	}
}

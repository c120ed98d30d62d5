package test

import (
	"strings"
	"time"
)

// Helpers of the session tests (session_test.go), and of exec with viaSessions.

// sessOut is a result of exec_command with yieldMs or of exec_session.
type sessOut struct {
	execOut
	Signal        string `json:"signal"`
	Running       bool   `json:"running"`
	SessionID     string `json:"sessionId"`
	StdoutDropped int64  `json:"stdoutDropped"`
	StderrDropped int64  `json:"stderrDropped"`
	Matched       bool   `json:"matched"`
	Sessions      []struct {
		SessionID string  `json:"sessionId"`
		Command   string  `json:"command"`
		TTY       bool    `json:"tty"`
		State     string  `json:"state"`
		AgeMs     float64 `json:"ageMs"`
	} `json:"sessions"`
}

// startSession runs exec_command with args (yieldMs 0 unless given) and wants a
// running session.
func (s *session) startSession(args map[string]any) sessOut {
	s.t.Helper()
	if _, ok := args["yieldMs"]; !ok {
		args["yieldMs"] = 0
	}
	var o sessOut
	if isErr := s.call("exec_command", args, &o); isErr || !o.Running || o.SessionID == "" {
		s.t.Fatalf("exec_command %v: want a running session, got %+v (tool error %v)", args, o, isErr)
	}
	return o
}

// sess calls exec_session.
func (s *session) sess(args map[string]any) (sessOut, bool) {
	s.t.Helper()
	var o sessOut
	isErr := s.call("exec_session", args, &o)
	return o, isErr
}

// until polls a session until its output so far contains want (or it ends), and
// returns that output and the last answer.
func (s *session) until(id, want string, so string) (string, sessOut) {
	s.t.Helper()
	if strings.Contains(so, want) {
		return so, sessOut{Running: true}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		o, isErr := s.sess(map[string]any{"sessionId": id, "action": "poll", "yieldMs": 2000})
		if isErr && o.Error != "" {
			s.t.Fatalf("poll %s: %s", id, o.Error)
		}
		so += o.Stdout
		if strings.Contains(so, want) || !o.Running || time.Now().After(deadline) {
			return so, o
		}
	}
}

// finish polls a session until its final answer, and returns all the stdout and
// that answer, with all the stderr.
func (s *session) finish(id string) (string, sessOut) {
	s.t.Helper()
	var all, errs string
	deadline := time.Now().Add(30 * time.Second)
	for {
		o, _ := s.sess(map[string]any{"sessionId": id, "action": "poll", "yieldMs": 5000})
		if o.Error != "" {
			s.t.Fatalf("poll %s: %s", id, o.Error)
		}
		all, errs = all+o.Stdout, errs+o.Stderr
		if !o.Running {
			o.Stderr = errs
			return all, o
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("session %s did not end: %+v", id, o)
		}
	}
}

// awaitListed waits until exec_session list shows session id in state
// ("running" or "ended"; "" for not listed), however long a loaded machine
// takes (list is no call about a session: it does not keep it from idling).
func (s *session) awaitListed(id, state string) {
	s.t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		l, _ := s.sess(map[string]any{"action": "list"})
		got := ""
		for _, e := range l.Sessions {
			if e.SessionID == id {
				got = e.State
			}
		}
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("session %s is %q in the list, not %q, after 2 minutes: %+v", id, got, state, l.Sessions)
		}
	}
}

// execAsSession is exec with the command run as a session (see viaSessions):
// started with yieldMs 0, then polled until its final answer.
func (s *session) execAsSession(args map[string]any) (execOut, bool) {
	s.t.Helper()
	a := map[string]any{"yieldMs": 0}
	for k, v := range args {
		a[k] = v
	}
	var o sessOut
	isErr := s.call("exec_command", a, &o)
	if !o.Running {
		return o.execOut, isErr // refused, or over at once
	}
	s.ranAsSessions++
	stdout, stderr := o.Stdout, o.Stderr
	for deadline := time.Now().Add(60 * time.Second); o.Running; {
		if time.Now().After(deadline) {
			s.t.Fatalf("session %v did not end", args)
		}
		id := o.SessionID
		o = sessOut{}
		isErr = s.call("exec_session", map[string]any{"sessionId": id, "action": "poll", "yieldMs": 5000}, &o)
		stdout, stderr = stdout+o.Stdout, stderr+o.Stderr
	}
	o.Stdout, o.Stderr = stdout, stderr
	return o.execOut, isErr
}

// through returns o's stdout and, while its command runs, the rest of the
// stdout up to the final answer, which it returns with it (and all the stderr
// from o's on).
func (s *session) through(o sessOut) (string, sessOut) {
	s.t.Helper()
	if !o.Running {
		return o.Stdout, o
	}
	more, f := s.finish(o.SessionID)
	f.Stderr = o.Stderr + f.Stderr
	return o.Stdout + more, f
}

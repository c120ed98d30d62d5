//go:build linux

// How a session ends: at once when its command fails at once, with its client
// or its server, at its timeoutMs, and after the server's idle limit.

package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessionEndsAtOnce: a session whose command fails at once answers as
// ended (running: false, its exit status), on a pipe and on a terminal; a
// later poll of an ended session reports the command's life as durationMs,
// not the time until the poll; and an ended session's place is free at once
// while its final result waits to be read.
func TestSessionEndsAtOnce(t *testing.T) {
	requireSandbox(t)
	s := start(t, "serve", "--max-sessions", "2")
	for _, tty := range []bool{false, true} {
		var o sessOut
		isErr := s.call("exec_command", map[string]any{"command": bash(`echo "boom: no such config" >&2; exit 3`), "yieldMs": 5000, "tty": tty}, &o)
		if o.Running {
			// The first answer waits a moment (endGrace) past the output
			// for the end; a machine too loaded to end bash in that moment
			// answers as a session, whose next poll has the end.
			t.Logf("tty %v: answered as running (a loaded machine); polling", tty)
			var p sessOut
			s.call("exec_session", map[string]any{"sessionId": o.SessionID, "action": "poll", "yieldMs": 30000}, &p)
			o.Running, o.ExitCode, o.SessionID, o.Stdout, o.Stderr = p.Running, p.ExitCode, "", o.Stdout+p.Stdout, o.Stderr+p.Stderr
		}
		if isErr || o.Running || o.code() != 3 || !strings.Contains(o.Stdout+o.Stderr, "boom") || o.SessionID != "" {
			t.Errorf("tty %v: a command that fails at once: %+v (tool error %v)", tty, o, isErr)
		}
	}
	// Positive control: a command that runs on is a session.
	a := s.startSession(map[string]any{"command": bash(`sleep 0.3; echo done; exit 4`), "yieldMs": 0})
	b := s.startSession(map[string]any{"command": bash(`sleep 0.3; exit 5`), "yieldMs": 0})
	// Both end by themselves; nobody polls them.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l, _ := s.sess(map[string]any{"action": "list"})
		ended := 0
		for _, x := range l.Sessions {
			if x.State == "ended" {
				ended++
			}
		}
		if ended == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sessions did not end: %+v", l.Sessions)
		}
	}
	time.Sleep(2 * time.Second) // a poll well after the end
	// Their places are free: two more sessions start at --max-sessions 2.
	c := s.startSession(map[string]any{"command": []string{"sleep", "600"}, "timeoutMs": 60000})
	d := s.startSession(map[string]any{"command": []string{"sleep", "600"}, "timeoutMs": 60000})
	res := s.callRaw("exec_command", map[string]any{"command": []string{"sleep", "600"}, "yieldMs": 0})
	if e := errorOf(res); !res.IsError || !strings.Contains(e, "2 are running, at most 2") || strings.Contains(e, a.SessionID) {
		t.Errorf("a third running session: %q", e)
	}
	// The ended ones' final results are kept, with the command's own life.
	for _, x := range []struct {
		id   string
		code int
		out  string
	}{{a.SessionID, 4, "done\n"}, {b.SessionID, 5, ""}} {
		o, _ := s.sess(map[string]any{"sessionId": x.id, "action": "poll"})
		if o.Running || o.code() != x.code || o.Stdout != x.out {
			t.Errorf("the final result of %s: %+v", x.id, o)
		}
		if o.DurationMs >= 2000 {
			t.Errorf("durationMs %v of a command that lived ~300 ms, polled 2 s after its end", o.DurationMs)
		}
	}
	s.sess(map[string]any{"sessionId": c.SessionID, "action": "close"})
	s.sess(map[string]any{"sessionId": d.SessionID, "action": "close"})
}

// TestCLISessionEndsAtOnce: exec --yield of a command that fails at once is an
// ordinary exec: its output and exit status, no session id.
func TestCLISessionEndsAtOnce(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.sessions = true
	r := h.run("", "exec", "--yield", "5s", "--", "sh", "-c", "echo boom >&2; exit 3")
	if id := strings.TrimSpace(r.stdout); r.code == 0 && strings.HasPrefix(id, "s-") {
		// As TestSessionEndsAtOnce: a machine too loaded to end sh within
		// the first answer's grace answers with a session; its poll has the
		// end (and an unread one would keep the session server).
		t.Logf("answered as a session (a loaded machine); polling: %s", r)
		p := h.run("", "session", "poll", "--yield", "30s", id)
		r.code, r.stderr = p.code, r.stderr+p.stderr
	}
	h.want(r, 3, "", "boom")
	waitSessionServerGone(t)
}

// TestSessionEndsWithClient: a session's tree is gone when the client
// disconnects, and when the server is killed outright.
func TestSessionEndsWithClient(t *testing.T) {
	requireSandbox(t)
	t.Run("disconnect", func(t *testing.T) {
		s := start(t)
		marker := "sleep " + uniqueSeconds(700)
		s.startSession(map[string]any{"command": bash(marker + " & " + marker), "timeoutMs": 120000})
		s.startSession(map[string]any{"command": []string{"sh", "-i"}, "tty": true, "timeoutMs": 120000})
		waitProcs(t, marker, true) // yieldMs 0 answers before the command may have run
		s.cs.Close()
		waitProcs(t, marker, false) // the client is gone
	})
	for _, m := range serverModes(t) {
		t.Run("SIGKILL/"+m.name, func(t *testing.T) {
			s := startEnv(t, m.env)
			marker := "sleep " + uniqueSeconds(701)
			s.startSession(map[string]any{"command": bash("setsid " + marker + " & " + marker), "timeoutMs": 120000})
			waitProcs(t, marker, true)
			s.cmd.Process.Kill()
			waitProcs(t, marker, false) // the server is killed
			// Its scratch dirs and cgroups are for the next autobox process to sweep.
			next := exec.Command(bin, "doctor")
			next.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TMPDIR=" + s.tmp, "AUTOBOX_STATE_DIR=" + t.TempDir()}
			if out, err := next.CombinedOutput(); err != nil {
				t.Fatalf("doctor: %v\n%s", err, out)
			}
		})
	}
}

// TestSweepAfterUnreapedKill: the cgroups of a server killed with SIGKILL
// are swept by the next autobox process even while the killed server is a
// zombie, its client not having reaped it yet (an MCP client reaps when it
// notices, which a busy machine delays). Before the sweep they are there: the
// positive control.
func TestSweepAfterUnreapedKill(t *testing.T) {
	requireSandbox(t)
	home := t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	cmd := exec.Command(bin)
	cmd.Env = env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := false
	defer func() {
		if !reaped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	say := func(m string) {
		if _, err := fmt.Fprintln(stdin, m); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() string {
		if !lines.Scan() {
			t.Fatalf("the server ended: %v", lines.Err())
		}
		return lines.Text()
	}
	say(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sweep-test","version":"1"}}}`)
	answer()
	say(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	say(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec_command","arguments":{"command":["echo","hi"]}}}`)
	var res struct {
		Result struct {
			StructuredContent struct{ Stdout string } `json:"structuredContent"`
		} `json:"result"`
	}
	if a := answer(); json.Unmarshal([]byte(a), &res) != nil || res.Result.StructuredContent.Stdout != "hi\n" {
		t.Fatalf("exec_command: %s", a)
	}
	pid := cmd.Process.Pid
	if len(callCgroups(pid)) == 0 {
		t.Skip("this process's server makes no cgroups here (no cgroup delegated to this user)")
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the killed server is not a zombie after 10 s")
		}
	}
	next := exec.Command(bin, "doctor")
	next.Env = append(env[:len(env):len(env)], "AUTOBOX_STATE_DIR="+t.TempDir())
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatal("the killed server was reaped before the sweep: the test checks nothing")
	}
	if left := callCgroups(pid); len(left) > 0 {
		t.Errorf("a sweep while the killed server is unreaped left %v", left)
	}
	cmd.Wait()
	reaped = true
}

// TestSessionTimeout: a session may run past 10 minutes (up to an hour), and
// its timeoutMs kills it all the same, saying how far it goes.
func TestSessionTimeout(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "timeoutMs": 700000})
	if e := errorOf(res); !strings.Contains(e, "timeoutMs must be between 1 and 600000") || !strings.Contains(e, "with yieldMs, a session may run up to 3600000") {
		t.Errorf("700 s without yieldMs: %q", e)
	}
	res = s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "timeoutMs": 3600001, "yieldMs": 0})
	if e := errorOf(res); !strings.Contains(e, "timeoutMs must be between 1 and 3600000") {
		t.Errorf("over an hour: %q", e)
	}
	o := s.startSession(map[string]any{"command": []string{"sleep", "600"}, "timeoutMs": 1500})
	_, f := s.finish(o.SessionID)
	if !f.Killed || !strings.HasPrefix(f.Stderr, "killed: timeout after 1500ms (the session's timeoutMs): start it again with a larger timeoutMs, at most 3600000\n") {
		t.Errorf("timeout: %+v", f)
	}
	// The long form is accepted.
	o = s.startSession(map[string]any{"command": []string{"sleep", "600"}, "timeoutMs": 3600000})
	if l, _ := s.sess(map[string]any{"action": "list"}); len(l.Sessions) != 1 {
		t.Errorf("list: %+v", l)
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
}

// TestSessionIdle: a session no call names for the idle limit is ended; its id
// then says why.
func TestSessionIdle(t *testing.T) {
	requireSandbox(t)
	s := start(t, "serve", "--session-idle", "1s")
	secs := uniqueSeconds(600)
	o := s.startSession(map[string]any{"command": []string{"sleep", secs}, "timeoutMs": 60000})
	// list does not count as use: wait until the session is gone from it,
	// then a poll names why.
	s.awaitListed(o.SessionID, "")
	p, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll"})
	if !isErr || !strings.Contains(p.Error, "unknown or ended session") || !strings.Contains(p.Error, "idle limit") {
		t.Errorf("poll after the idle limit: %+v", p)
	}
	waitProcs(t, "sleep "+secs, false)
}

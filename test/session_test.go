//go:build linux

package test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSessionPolledTwice(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.startSession(map[string]any{"command": bash("echo one; sleep 1; echo two; echo err >&2; exit 3"), "yieldMs": 5000, "timeoutMs": 60000})
	if o.Stdout != "one\n" || o.ExitCode != nil || o.Killed {
		t.Errorf("first answer: %+v", o)
	}
	p, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll", "yieldMs": 5000})
	if !strings.HasPrefix(p.Stdout, "two\n") {
		t.Errorf("second answer: %+v", p)
	}
	rest, final := s.through(p)
	if rest != "two\n" || final.code() != 3 || final.Killed || !strings.Contains(final.Stderr, "err") {
		t.Errorf("final: %+v (stdout after the first answer %q)", final, rest)
	}
	// Read once: the id is gone now.
	g, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll"})
	if !isErr || !strings.Contains(g.Error, "unknown or ended session") || !strings.Contains(g.Error, "read already") {
		t.Errorf("poll after the final answer: %+v", g)
	}
}

func TestSessionCat(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.startSession(map[string]any{"command": []string{"cat"}, "timeoutMs": 60000})
	w, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "hello\n", "yieldMs": 5000})
	if isErr || w.Stdout != "hello\n" || !w.Running {
		t.Errorf("write: %+v", w)
	}
	w, isErr = s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "bye", "closeStdin": true, "yieldMs": 5000})
	out, w := s.through(w)
	if isErr || out != "bye" || w.code() != 0 {
		t.Errorf("write and close stdin: %+v (%q)", w, out)
	}
}

// TestSessionTerminal: on a tty, an interactive shell and python3 -i answer what
// is written to them; isatty is true and the terminal has a name.
func TestSessionTerminal(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.startSession(map[string]any{"command": []string{"sh", "-i"}, "tty": true, "rows": 30, "cols": 100, "timeoutMs": 60000, "yieldMs": 2000})
	if !strings.Contains(o.Stdout, "$ ") && !strings.Contains(o.Stdout, "# ") {
		t.Errorf("no prompt: %+v", o)
	}
	w, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "echo $((6*7)); [ -t 0 ] && echo isatty; tty; stty size\n", "yieldMs": 5000})
	got, _ := s.until(o.SessionID, "30 100", w.Stdout)
	name := "/dev/pts/"
	if namespaced() {
		name = "/dev/console" // /dev/pts is the call's own there
	}
	for _, want := range []string{"42", "isatty", name, "30 100"} {
		if !strings.Contains(got, want) {
			t.Errorf("sh -i on a tty: %q lacks %q", got, want)
		}
	}
	w, _ = s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "exit 4\n", "yieldMs": 5000})
	_, w = s.through(w)
	if w.code() != 4 {
		t.Errorf("exit 4: %+v", w)
	}

	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the python3 -i case needs it")
	}
	o = s.startSession(map[string]any{"command": []string{"python3", "-i", "-q"}, "tty": true, "timeoutMs": 60000, "yieldMs": 5000})
	got, _ = s.until(o.SessionID, ">>> ", o.Stdout)
	w, _ = s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "import sys; print(6*7, sys.stdin.isatty())\n", "yieldMs": 5000})
	if got, _ = s.until(o.SessionID, "42 True", w.Stdout); !strings.Contains(got, "42 True") {
		t.Errorf("python3 -i: %q", got)
	}
	c, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	if isErr || c.Running || !c.Killed || !strings.HasPrefix(c.Stderr, "killed: session closed") {
		t.Errorf("close: %+v (tool error %v)", c, isErr)
	}
}

// TestSessionPrompt: a prompt (read -p, shown on a terminal only) is answered.
func TestSessionPrompt(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.startSession(map[string]any{"command": bash(`read -p "Continue? [y/N] " a; echo "answer=$a"; [ "$a" = y ]`), "tty": true, "timeoutMs": 60000, "yieldMs": 5000})
	if got, _ := s.until(o.SessionID, "[y/N] ", o.Stdout); !strings.HasSuffix(got, "Continue? [y/N] ") {
		t.Fatalf("prompt: %q", got)
	}
	w, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "y\r", "yieldMs": 5000})
	out, w := s.through(w)
	if !strings.Contains(out, "answer=y") || w.code() != 0 {
		t.Errorf("answered: %q %+v", out, w)
	}
}

// TestSessionCtrlC: SIGINT by the signal action (pipes: the command's process
// group; tty: its foreground job) and as \u0003 typed on a tty.
func TestSessionCtrlC(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.startSession(map[string]any{"command": bash(`trap 'echo caught; exit 5' INT; echo ready; while :; do sleep 0.1; done`), "timeoutMs": 60000, "yieldMs": 5000})
	if o.Stdout != "ready\n" {
		t.Errorf("start: %+v", o)
	}
	g, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "signal", "signal": "INT", "yieldMs": 5000})
	out, g := s.through(g)
	if isErr || out != "caught\n" || g.code() != 5 {
		t.Errorf("signal INT: %q %+v (tool error %v)", out, g, isErr)
	}
	// On a tty: a job of an interactive shell, interrupted by Ctrl-C typed and by
	// the signal action; the shell lives on.
	o = s.startSession(map[string]any{"command": []string{"sh", "-i"}, "tty": true, "timeoutMs": 60000, "yieldMs": 2000})
	for i, how := range []map[string]any{
		{"action": "write", "input": "\u0003"},
		{"action": "signal", "signal": "INT"},
	} {
		// The job runs before it is interrupted: its own line says so (the
		// terminal's echo of the typed line reads st''arted, not started).
		started := fmt.Sprintf("started%d", i)
		w, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": fmt.Sprintf("sh -c 'echo st''arted%d; exec sleep 60'\n", i), "yieldMs": 2000})
		if got, _ := s.until(o.SessionID, started, w.Stdout); !strings.Contains(got, started) {
			t.Fatalf("%v: the job did not start: %q", how, got)
		}
		how["sessionId"], how["yieldMs"] = o.SessionID, 500
		s.sess(how)
		// The shell drops the rest of an interrupted line: ask afterwards.
		e, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": fmt.Sprintf("echo status%d=$?\n", i), "yieldMs": 2000})
		got, _ := s.until(o.SessionID, fmt.Sprintf("status%d=130", i), e.Stdout)
		if !strings.Contains(got, fmt.Sprintf("status%d=130", i)) {
			t.Errorf("%v: the job was not interrupted: %q", how, got)
		}
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
}

// TestSessionFlood: a command that floods output while nobody polls keeps the
// server's memory flat; the final answer says how much was dropped.
func TestSessionFlood(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	rss := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				return kb >> 10
			}
		}
		t.Fatal("no VmRSS")
		return 0
	}
	// A flood of a known size, that ends: its first answer (full at once)
	// shows the flood under way; the session listed as ended shows that the
	// server has read all of it. Unread, 90 MB of it would be in the server's
	// memory; dropped, none is, though what the server read and let go is
	// garbage until its collector runs, which a loaded machine puts off (the
	// heap's growth is bounded by what it holds live, not by the flood: 18 MB
	// was seen with 48 MB of flood).
	const flood = 96_000_000
	o := s.startSession(map[string]any{"command": bash(fmt.Sprintf("yes flood | head -c %d", flood)), "timeoutMs": 120000, "yieldMs": 30000})
	if !o.Running || o.Stdout == "" {
		t.Fatalf("the flood's first answer: running %v, %d bytes of stdout", o.Running, len(o.Stdout))
	}
	before := rss()
	s.awaitListed(o.SessionID, "ended")
	after := rss()
	if after > before+40 {
		t.Errorf("server RSS grew from %d MB to %d MB while the flood went unread", before, after)
	}
	p, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll", "yieldMs": 0})
	if p.StdoutDropped == 0 || !p.StdoutTruncated || !strings.Contains(p.Stdout, "bytes of stdout dropped here") || len(p.Stdout) > 256<<10+200 {
		t.Errorf("poll after the flood: dropped %d, %d bytes: %.120q", p.StdoutDropped, len(p.Stdout), p.Stdout)
	}
	// What the answers say was dropped is what they lack of the flood. The
	// first answer goes out once 256 KB have come, but on a loaded machine
	// more may come before it is taken: past the 1 MB a session keeps, it
	// too starts with a note of what it dropped.
	first := o.Stdout
	if o.StdoutDropped > 0 {
		_, first, _ = strings.Cut(first, "]\n")
	}
	_, kept, _ := strings.Cut(p.Stdout, "]\n") // after the note of the drop
	if i := strings.LastIndex(kept, "\n[autobox: stdout truncated: "); i >= 0 {
		kept = kept[:i]
	}
	answered, dropped := len(first)+len(kept), o.StdoutDropped+p.StdoutDropped
	if got := int64(answered) + dropped; got != flood {
		t.Errorf("answered %d bytes and said %d (first answer) + %d (poll) were dropped: %d in all, of a flood of %d", answered, o.StdoutDropped, p.StdoutDropped, got, flood)
	}
	t.Logf("server RSS %d MB, then %d MB; %d bytes dropped", before, after, p.StdoutDropped)
}

// TestSessionLimit: the 17th open session is refused with an error naming the
// open ones; closing one makes room.
func TestSessionLimit(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	var ids []string
	for i := 0; i < 16; i++ {
		ids = append(ids, s.startSession(map[string]any{"command": []string{"sleep", "600"}, "timeoutMs": 120000}).SessionID)
	}
	res := s.callRaw("exec_command", map[string]any{"command": []string{"sleep", "600"}, "yieldMs": 0})
	if e := errorOf(res); !res.IsError || !strings.Contains(e, "too many sessions") || !strings.Contains(e, "at most 16") || !strings.Contains(e, ids[0]) || !strings.Contains(e, "sleep 600") {
		t.Errorf("17th: isError %v, %q", res.IsError, e)
	}
	l, _ := s.sess(map[string]any{"action": "list"})
	if len(l.Sessions) != 16 || l.Sessions[0].SessionID != ids[0] || l.Sessions[0].State != "running" || l.Sessions[0].Command != "sleep 600" {
		t.Errorf("list: %+v", l.Sessions)
	}
	if c, _ := s.sess(map[string]any{"sessionId": ids[3], "action": "close"}); c.Running || !c.Killed {
		t.Errorf("close: %+v", c)
	}
	s.startSession(map[string]any{"command": []string{"true"}, "yieldMs": 0}) // room again
	// The server's end takes the rest (the harness checks that nothing is left).
}

// TestSessionIDsAndErrors: ids are the server's own; calls name their mistakes;
// input for a stdin that is closed is an error, not a hang.
func TestSessionIDsAndErrors(t *testing.T) {
	requireSandbox(t)
	a, b := start(t), start(t)
	o := a.startSession(map[string]any{"command": []string{"cat"}, "timeoutMs": 60000})
	if p, isErr := b.sess(map[string]any{"sessionId": o.SessionID, "action": "poll"}); !isErr || !strings.Contains(p.Error, "unknown or ended session") || p.ExitCode != nil || p.Stderr != p.Error {
		t.Errorf("another server's id: %+v", p)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "poll"}, "poll needs sessionId"},
		{map[string]any{"action": "explode", "sessionId": o.SessionID}, `action "explode" is not poll, write, signal, close or list`},
		{map[string]any{"action": "write", "sessionId": o.SessionID}, "write needs input"},
		{map[string]any{"action": "signal", "sessionId": o.SessionID, "signal": "STOP"}, `signal "STOP" is not INT, TERM or KILL`},
		{map[string]any{"action": "list", "sessionId": o.SessionID}, "list takes no other parameter"},
		{map[string]any{"action": "poll", "sessionId": o.SessionID, "input": "x"}, "input and closeStdin are for write"},
		{map[string]any{"action": "poll", "sessionId": o.SessionID, "yieldMs": 30001}, "yieldMs must be between 0 and 30000"},
		{map[string]any{"action": "write", "sessionId": o.SessionID, "input": strings.Repeat("x", 65537)}, "at most 65536"},
	} {
		if p, isErr := a.sess(c.args); !isErr || !strings.Contains(p.Error, c.want) {
			t.Errorf("%v: want a tool error with %q, got %+v", c.args, c.want, p)
		}
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": []string{"true"}, "tty": true}, "tty needs yieldMs"},
		{map[string]any{"command": []string{"true"}, "yieldMs": 0, "rows": 10}, "need tty: true"},
		{map[string]any{"command": []string{"true"}, "yieldMs": 0, "mounts": []map[string]any{{"workspaceId": "x"}}}, "is not a UUIDv4"},
		{map[string]any{"command": []string{"true"}, "yieldMs": 30001}, "yieldMs must be between 0 and 30000"},
	} {
		if res := a.callRaw("exec_command", c.args); !res.IsError || !strings.Contains(errorOf(res), c.want) {
			t.Errorf("%v: want a tool error with %q, got %s", c.args, c.want, textOf(res))
		}
	}
	// A command that closed its stdin, and one that ended.
	o = a.startSession(map[string]any{"command": bash("exec 0<&-; echo closed; sleep 600"), "timeoutMs": 60000, "yieldMs": 5000})
	if w, isErr := a.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "x\n"}); !isErr || !strings.Contains(w.Error, "closed its stdin") {
		t.Errorf("write to a closed stdin: %+v", w)
	}
	a.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	o = a.startSession(map[string]any{"command": bash("sleep 0.3"), "timeoutMs": 60000})
	a.awaitListed(o.SessionID, "ended")
	if w, isErr := a.sess(map[string]any{"sessionId": o.SessionID, "action": "write", "input": "x\n"}); !isErr || !strings.Contains(w.Error, "has ended") {
		t.Errorf("write to an ended session: %+v", w)
	}
	if _, f := a.finish(o.SessionID); f.code() != 0 {
		t.Errorf("its result, after the refused write: %+v", f)
	}
}

// TestSessionReachableFromAnotherCall: a server started in a session with
// allowNetwork listens on the host's loopback, and is reachable from another
// call when both allow the network, and not from one that does not (README,
// Dev servers: a session that shares the host's network; the session's own
// network is TestSessionPorts).
func TestSessionReachableFromAnotherCall(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the example serves with python3 -m http.server")
	}
	s := start(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "index.html"), "hello from the session\n")
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/site", "mode": "ro"}}
	o := s.startSession(map[string]any{"command": []string{"python3", "-u", "-m", "http.server", port, "--bind", "127.0.0.1", "--directory", "/mnt/site"}, "allowNetwork": true, "mounts": mounts, "timeoutMs": 120000, "yieldMs": 3000})
	s.until(o.SessionID, "Serving HTTP", o.Stdout+o.Stderr)
	url := "http://127.0.0.1:" + port + "/"
	var got execOut
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) { // until it answers
		if got, _ = s.exec(map[string]any{"command": []string{"curl", "-sS", url}, "allowNetwork": true, "timeoutMs": 5000}); got.Stdout != "" {
			break
		}
	}
	if got.Stdout != "hello from the session\n" {
		t.Errorf("curl with allowNetwork: %+v", got)
	}
	if d, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", url}, "timeoutMs": 5000}); d.code() == 0 {
		t.Errorf("curl without allowNetwork reached the session's server: %+v", d)
	}
	// Or the second call names it in its host allowlist (through the proxy).
	byName := "http://localhost:" + port + "/"
	if h, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", byName}, "allowHosts": []string{"localhost:" + port}, "timeoutMs": 5000}); h.Stdout != "hello from the session\n" {
		t.Errorf("curl with allowHosts localhost:%s: %+v", port, h)
	}
	if h, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", byName}, "allowHosts": []string{"localhost:1"}, "timeoutMs": 5000}); strings.Contains(h.Stdout, "hello") || !strings.Contains(h.Stdout+h.Stderr, "denied") {
		t.Errorf("curl with allowHosts of another port: %+v", h)
	}
	c, _ := s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	if !strings.Contains(c.Stderr, "GET / HTTP") {
		t.Errorf("the server's log: %+v", c)
	}
}

// TestSessionSandbox: a session's command is sandboxed as a one-shot call's
// is: the denial tests of exec_test.go, with each of their calls a session.
func TestSessionSandbox(t *testing.T) {
	requireSandbox(t)
	for name, f := range map[string]func(*testing.T, *session){"filesystem": execFilesystem, "network": execNetwork, "processes": execProcesses} {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			s.viaSessions = true
			f(t, s)
			if s.ranAsSessions == 0 {
				t.Error("no command outlived its first answer: nothing was checked as a session")
			}
			t.Logf("%d commands ran as sessions", s.ranAsSessions)
		})
	}
}

//go:build linux

package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog collects the notifications/progress a client gets.
type progressLog struct {
	mu   sync.Mutex
	got  []*mcp.ProgressNotificationParams
	more chan struct{} // closed and replaced at each
}

func newProgressLog() *progressLog { return &progressLog{more: make(chan struct{})} }

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, req.Params)
	close(p.more)
	p.more = make(chan struct{})
}

// of returns the notifications of token so far.
func (p *progressLog) of(token string) []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, n := range p.got {
		if fmt.Sprint(n.ProgressToken) == token {
			out = append(out, n)
		}
	}
	return out
}

// await waits (at most a minute: a hang fails, not a slow machine) for a
// notification of token whose message is msg.
func (p *progressLog) await(t *testing.T, token, msg string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		p.mu.Lock()
		more := p.more
		p.mu.Unlock()
		for _, n := range p.of(token) {
			if n.Message == msg {
				return
			}
		}
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("no notifications/progress of %s with message %q; got %s", token, msg, p.describe(token))
		}
	}
}

func (p *progressLog) describe(token string) string {
	var parts []string
	for _, n := range p.of(token) {
		parts = append(parts, fmt.Sprintf("{%v/%v %q}", n.Progress, n.Total, n.Message))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// check holds the notifications of token to what every report must be: its
// progress rising, its total the call's limit in seconds.
func (p *progressLog) check(t *testing.T, token string, total float64) {
	t.Helper()
	last := -1.0
	for _, n := range p.of(token) {
		if n.Progress <= last || n.Total != total {
			t.Errorf("progress of %s: want rising progress of total %v, got %s", token, total, p.describe(token))
			return
		}
		last = n.Progress
	}
}

// callWithToken makes a tool call that carries a progress token, in the
// background; wait returns its result.
func (s *session) callWithToken(tool string, args map[string]any, token string) (wait func(out any) bool) {
	done := make(chan *mcp.CallToolResult, 1)
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		params.SetProgressToken(token)
		res, err := s.cs.CallTool(ctx, params)
		errc <- err
		done <- res
	}()
	return func(out any) bool {
		s.t.Helper()
		if err := <-errc; err != nil {
			s.t.Fatalf("%s: %v", tool, err)
		}
		res := <-done
		if err := checkResult(s.schemas, tool, res); err != nil {
			s.t.Errorf("%s: %v", tool, err)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s: %v", tool, err)
		}
		return res.IsError
	}
}

// TestProgress: a call that carries a progress token gets notifications/progress
// while it runs, each with the latest line of output as its message, for
// exec_command, an exec_session poll and execute_js; a call without one gets
// none. A poll with yieldMs answers with what came meanwhile, not the first
// burst, and one with until at the line that matches. No step waits on a
// clock: each command goes on when the test, having seen the report, says so.
func TestProgress(t *testing.T) {
	requireSandbox(t)
	log := newProgressLog()
	s := startClient(t, &mcp.ClientOptions{ProgressNotificationHandler: log.handle}, nil, nil, []string{bin})
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // a root server without namespaces runs commands as nobody
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/f", "mode": "rw"}}
	waitFor := func(name string) string {
		return fmt.Sprintf(`while [ ! -e /mnt/f/%s ]; do sleep 0.05; done`, name)
	}
	touch := func(name string) { writeFile(t, filepath.Join(dir, name), "") }

	// exec_command: the latest line is the message, the limit the total.
	wait := s.callWithToken("exec_command", map[string]any{"command": bash(`echo compiling; echo "step 1 of 2"; ` + waitFor("go") + `; echo "step 2 of 2"`), "mounts": mounts, "timeoutMs": 90000}, "exec-1")
	log.await(t, "exec-1", "step 1 of 2")
	touch("go")
	var o execOut
	if isErr := wait(&o); isErr || o.code() != 0 || o.Stdout != "compiling\nstep 1 of 2\nstep 2 of 2\n" {
		t.Errorf("exec_command with a progress token: %+v", o)
	}
	log.check(t, "exec-1", 90)

	// Without a token, none (and with one, a command that ended at once has
	// nothing to report).
	before := len(log.got)
	if o, _ := s.exec(map[string]any{"command": bash(`sleep 2.5; echo done`)}); o.Stdout != "done\n" {
		t.Errorf("without a token: %+v", o)
	}
	log.mu.Lock()
	after := len(log.got)
	log.mu.Unlock()
	if after != before {
		t.Errorf("a call without a progress token got %d notifications", after-before)
	}

	// exec_session poll: it waits its yieldMs through a first burst ("a") and
	// a second ("b"), reporting each, and answers with both at the end.
	var st sessOut
	s.call("exec_command", map[string]any{"command": bash(`echo a; ` + waitFor("go-a") + `; echo b; ` + waitFor("go-b") + `; echo end`), "mounts": mounts, "yieldMs": 0, "timeoutMs": 120000}, &st)
	if !st.Running {
		t.Fatalf("the session: %+v", st)
	}
	seen := st.Stdout
	waitPoll := s.callWithToken("exec_session", map[string]any{"sessionId": st.SessionID, "action": "poll", "yieldMs": 30000}, "poll-1")
	log.await(t, "poll-1", "a")
	touch("go-a")
	log.await(t, "poll-1", "b")
	touch("go-b")
	var p sessOut
	waitPoll(&p)
	if p.Running || p.code() != 0 || seen+p.Stdout != "a\nb\nend\n" {
		t.Errorf("a poll of 30 s through two bursts: %+v (before it: %q)", p, seen)
	}
	log.check(t, "poll-1", 30)

	// until: the poll answers at the line that matches, the command running on.
	s.call("exec_command", map[string]any{"command": bash(`echo compiling; ` + waitFor("go-c") + `; echo "ready on port 8000"; ` + waitFor("never")), "mounts": mounts, "yieldMs": 0, "timeoutMs": 120000}, &st)
	touch("go-c")
	s.call("exec_session", map[string]any{"sessionId": st.SessionID, "action": "poll", "yieldMs": 30000, "until": `^ready on port \d+$`}, &p)
	if !p.Running || !p.Matched || !strings.Contains(st.Stdout+p.Stdout, "ready on port 8000\n") {
		t.Errorf("a poll until a line: %+v", p)
	}
	res := s.callRaw("exec_session", map[string]any{"sessionId": st.SessionID, "action": "poll", "until": "(unclosed"})
	if !res.IsError || !strings.Contains(textOf(res), "until is not a regular expression") {
		t.Errorf("a bad until: %s", textOf(res))
	}
	s.sess(map[string]any{"sessionId": st.SessionID, "action": "close"})

	// execute_js: the latest console line.
	waitJS := s.callWithToken("execute_js", map[string]any{"code": `console.log("loading"); console.log("phase 1");
for (;;) { try { await host.readFile("/mnt/f/go-js"); break } catch (e) {} }
console.log("phase 2"); 42`, "mounts": mounts, "timeoutMs": 10000}, "js-1")
	log.await(t, "js-1", "phase 1")
	touch("go-js")
	var j jsOut
	if isErr := waitJS(&j); isErr || !j.OK || string(j.Result) != "42" || len(j.Logs) != 3 {
		t.Errorf("execute_js with a progress token: %+v", j)
	}
	log.check(t, "js-1", 10)
}

// TestCLIProgress: on a terminal, autobox exec draws what an MCP client gets
// as progress: a line on stderr with the time so far and the latest output,
// erased when the command ends; stdout has the output alone.
func TestCLIProgress(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	cmd := exec.Command(bin, "exec", "--mount", dir+":/mnt/f:rw", "--", "sh", "-c", `echo "step 1"; while [ ! -e /mnt/f/go ]; do sleep 0.05; done; echo "step 2"`)
	cmd.Env = h.env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var tty []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(tty, []byte("autobox exec: ")) || !bytes.Contains(tty, []byte(": step 1")) {
		n, err := master.Read(buf)
		tty = append(tty, buf[:n]...)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("the terminal ended before a progress line: %q", tty)
		}
	}
	writeFile(t, filepath.Join(dir, "go"), "")
	rest, _ := io.ReadAll(master) // EIO once the last writer is gone
	tty = append(tty, rest...)
	if err := cmd.Wait(); err != nil || stdout.String() != "step 1\nstep 2\n" {
		t.Errorf("exec: %v, stdout %q", err, stdout.String())
	}
	if !bytes.HasSuffix(tty, []byte("\r\x1b[K")) {
		t.Errorf("the progress line was not erased: %q", tty)
	}
	noLeftovers(t)
}

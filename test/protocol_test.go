package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawSession speaks JSON-RPC to the binary by hand, to send what a real client never
// would.
type rawSession struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	msgs chan map[string]any
}

func startRaw(t *testing.T) *rawSession {
	t.Helper()
	r := spawnRaw(t, nil, nil)
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.reply(0); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// spawnRaw starts the binary with args and env added to a home, state dir
// and config dir of the test's own, and says nothing to it yet.
func spawnRaw(t *testing.T, args, env []string) *rawSession {
	t.Helper()
	cmd := exec.Command(bin, args...)
	home := t.TempDir()
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "AUTOBOX_STATE_DIR=" + t.TempDir(), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}, env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawSession{t: t, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), msgs: make(chan map[string]any, 100)}
	go func() {
		for {
			line, err := r.out.ReadBytes('\n')
			if len(line) > 0 {
				var m map[string]any
				if json.Unmarshal(line, &m) != nil {
					m = map[string]any{"unparseable": string(line)}
				}
				r.msgs <- m
			}
			if err != nil {
				close(r.msgs)
				return
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return // the test stopped it itself
		}
		pid := cmd.Process.Pid
		kids := descendants(pid)
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("server did not exit within 5s of stdin closing")
			cmd.Process.Kill()
			<-done
		}
		waitGone(t, append(kids, pid))
	})
	return r
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("writing to the server: %v", err)
	}
}

// reply waits for the response with the given id (float64 in JSON), skipping
// notifications; id < 0 takes the next response of any id (or with a null id).
func (r *rawSession) reply(id int) map[string]any {
	r.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-r.msgs:
			if !ok {
				r.t.Fatalf("server closed stdout while waiting for id %d", id)
			}
			if _, isNote := m["method"]; isNote && m["id"] == nil {
				continue
			}
			if id < 0 || m["id"] == float64(id) {
				return m
			}
		case <-timeout:
			r.t.Fatalf("no reply with id %d within 30s", id)
		}
	}
}

// ping proves the session still works.
func (r *rawSession) ping(id int) {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	if m := r.reply(id); m["result"] == nil {
		r.t.Fatalf("ping after abuse: %v", m)
	}
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestProtocolAbuse(t *testing.T) {
	r := startRaw(t)
	// Malformed JSON → parse error; the session lives on.
	r.send(`{"jsonrpc":"2.0","id":1,"method":`)
	if m := r.reply(-1); errCode(m) != -32700 {
		t.Errorf("malformed JSON: %v", m)
	}
	r.ping(2)
	r.send("\xff\xfe{not utf8}")
	if m := r.reply(-1); m["error"] == nil {
		t.Errorf("invalid UTF-8: %v", m)
	}
	r.ping(3)
	// A 70 KB line that is a valid call.
	big := strings.Repeat("x", 70<<10)
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"'%s'.length"}}}`, big))
	if m := r.reply(4); !strings.Contains(fmt.Sprint(m["result"]), "71680") {
		t.Errorf("70 KB call: %.300v", m)
	}
	// Unknown tool, unknown method, wrong argument types, missing fields.
	r.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`)
	if m := r.reply(5); m["error"] == nil && !strings.Contains(fmt.Sprint(m["result"]), "isError:true") {
		t.Errorf("unknown tool: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":6,"method":"no/such/method"}`)
	if m := r.reply(6); errCode(m) != -32601 {
		t.Errorf("unknown method: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":["not","a","string"]}}}`)
	if m := r.reply(7); !strings.Contains(fmt.Sprint(m), "isError:true") {
		t.Errorf("wrong type: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"exec_command","arguments":{"timeoutMs":1e309}}}`)
	if m := r.reply(-1); m["error"] == nil && !strings.Contains(fmt.Sprint(m), "isError:true") {
		t.Errorf("non-finite number: %v", m)
	}
	r.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1","mounts":[{"hostPath":"/tmp","sandboxPath":"/mnt/t","mode":"RW "}]}}}`)
	if m := r.reply(9); !strings.Contains(fmt.Sprint(m), `mode \"RW \"`) && !strings.Contains(fmt.Sprint(m), "RW ") {
		t.Errorf("unknown mount mode: %v", m)
	}
	r.ping(10)
}

// TestProtocolLastLineWithoutNewline: a request cut short by EOF, with no newline, is
// still read and answered before the server exits; as the client has gone, the call
// is cancelled at once (see TestProtocolStdinClosedMidCall), and says so.
func TestProtocolLastLineWithoutNewline(t *testing.T) {
	r := startRaw(t)
	// A call that would run on: one that ends first (6*7 did, now and then, on a
	// loaded machine) has nothing to cancel.
	io.WriteString(r.in, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"while (true) {}","timeoutMs":10000}}}`)
	r.in.Close()
	if m := r.reply(7); !strings.Contains(fmt.Sprint(m["result"]), "the client closed the session") {
		t.Errorf("last line: %v", m)
	}
}

func TestProtocolHugeLine(t *testing.T) {
	r := startRaw(t)
	// 100 MB in one line: refused without being held in memory, never a crash or a
	// hang, and answered with the line's id.
	r.sendHuge(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"'`, 100, `'.length"}}}`)
	if m := r.reply(-1); errCode(m) != -32600 || m["id"] != float64(1) {
		t.Errorf("100 MB line: %.300v", m)
	}
	r.ping(2)
	// The same with the id last, as the TypeScript SDK writes it.
	r.sendHuge(`{"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"'`, 10, `'.length"}},"jsonrpc":"2.0","id":3}`)
	if m := r.reply(-1); errCode(m) != -32600 || m["id"] != float64(3) {
		t.Errorf("10 MB line, id last: %.300v", m)
	}
	r.ping(4)
}

// TestProtocolDeepLine (issue 20 item 11): a line nested past every decoder's
// limit is answered with its id, first or last in the line, and the session
// goes on.
func TestProtocolDeepLine(t *testing.T) {
	r := startRaw(t)
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1","x":` + deep + `}}}`)
	if m := r.reply(-1); m["error"] == nil || m["id"] != float64(1) {
		t.Errorf("deep line, id first: %.300v", m)
	}
	r.ping(2)
	r.send(`{"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"1","x":` + deep + `}},"jsonrpc":"2.0","id":3}`)
	if m := r.reply(-1); m["error"] == nil || m["id"] != float64(3) {
		t.Errorf("deep line, id last: %.300v", m)
	}
	r.ping(4)
}

// sendHuge writes, in the background, one line of head, mb megabytes of "a" and tail.
func (r *rawSession) sendHuge(head string, mb int, tail string) {
	chunk := strings.Repeat("a", 1<<20)
	go func() {
		io.WriteString(r.in, head)
		for i := 0; i < mb; i++ {
			if _, err := io.WriteString(r.in, chunk); err != nil {
				return
			}
		}
		io.WriteString(r.in, tail+"\n")
	}()
}

// TestProtocolStdinClosedMidCall: when the client closes the server's stdin,
// the calls in flight are cancelled at once, not left to run out a grace.
func TestProtocolStdinClosedMidCall(t *testing.T) {
	r := startRaw(t)
	rw := t.TempDir()
	started, gate, late := filepath.Join(rw, "started"), filepath.Join(rw, "gate"), filepath.Join(rw, "late")
	secs := uniqueSeconds(29)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"command":["sleep","` + secs + `"],"timeoutMs":30000}}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"while(true){}","timeoutMs":10000}}}`)
	// A command that writes a file a while after stdin closes (the gate opens
	// just before; it holds how long): cancelled at once, it never does (a
	// grace for calls in flight would let it). The while is three times what
	// starting the command took, so however loaded the machine, ending the
	// command has more time than starting it had.
	sent := time.Now()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec_command","arguments":{"command":["bash","-c","touch /mnt/rw/started; until [ -e /mnt/rw/gate ]; do sleep 0.01; done; sleep $(cat /mnt/rw/gate); touch /mnt/rw/late"],"timeoutMs":600000,"mounts":[{"hostPath":%q,"sandboxPath":"/mnt/rw","mode":"rw"}]}}}`, rw))
	waitProcs(t, "sleep "+secs, true) // however long a loaded machine takes to start them
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the gated command did not start within 2 minutes")
		}
	}
	runOn := max(1500*time.Millisecond, 3*time.Since(sent))
	writeFile(t, gate+".new", fmt.Sprintf("%.3f", runOn.Seconds()))
	if err := os.Rename(gate+".new", gate); err != nil { // the command reads it whole
		t.Fatal(err)
	}
	pids := append(descendants(r.cmd.Process.Pid), r.cmd.Process.Pid) // the gated shell among them
	r.in.Close()
	// The calls in flight are cancelled at once, not left to run out a grace: each
	// is answered as cancelled, so neither the commands nor the JS loop ran on.
	got := map[float64]map[string]any{}
	for len(got) < 3 {
		m := r.reply(-1)
		got[m["id"].(float64)] = m
	}
	for _, id := range []float64{1, 3} {
		if m := got[id]; !strings.Contains(fmt.Sprint(m["result"]), "killed: call cancelled") {
			t.Errorf("exec_command %v after EOF: %v", id, m)
		}
	}
	if m := got[2]; !strings.Contains(fmt.Sprint(m["result"]), "client closed the session") {
		t.Errorf("execute_js after EOF: %v", m)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("server exit: %v", err)
	}
	waitGone(t, pids)
	if pids := findProcs("sleep " + secs); len(pids) > 0 {
		t.Errorf("command outlived the server: %v", pids)
	}
	// The gated shell is gone: nothing writes the file from now on.
	if _, err := os.Stat(late); err == nil {
		t.Errorf("a call in flight ran on for %v after stdin closed: it wrote %s", runOn, late)
	}
}

func TestProtocolCancel(t *testing.T) {
	r := startRaw(t)
	secs := uniqueSeconds(28)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec_command","arguments":{"command":["sleep","` + secs + `"],"timeoutMs":30000}}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"while(true){}","timeoutMs":10000}}}`)
	// The command runs before it is cancelled (else the test would prove
	// nothing): however long a loaded machine takes to start it.
	waitProcs(t, "sleep "+secs, true)
	js := workerBusy(t, r.cmd.Process.Pid)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"test"}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"test"}}`)
	waitProcs(t, "sleep "+secs, false)
	// The JS loop's worker is ended too: its process goes.
	waitGone(t, []int{js})
	// Only the worker of the cancelled call dies; the pool refills and serves.
	r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":"6*7"}}}`)
	if m := r.reply(3); !strings.Contains(fmt.Sprint(m["result"]), "42") {
		t.Errorf("after cancel: %v", m)
	}
}

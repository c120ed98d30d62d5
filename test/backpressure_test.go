package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A client that sends many calls and reads none of the answers: the server must stop
// reading (its stdin pipe fills and the client's writes block) instead of running
// every call and holding every answer, and its memory and goroutines must stay within
// the bound the README states. Then the client reads, and every call is answered.
// make soak sends 20,000 calls, every 10th running JavaScript (the others refused at
// validation, which costs no worker); make test 3,000, every 100th running.
func TestUnreadClient(t *testing.T) {
	n, every := 3000, 100
	if os.Getenv("AUTOBOX_SOAK") != "" {
		n, every = 20000, 10
	}
	call := func(i int) string {
		code := fmt.Sprintf(`"%d * 2"`, i)
		if i%every != 0 {
			code = fmt.Sprint(i) // not a string: refused, naming code
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_js","arguments":{"code":%s}}}`+"\n", i, code)
	}
	cmd, in, outR, out, stderr := startPiped(t)
	defer func() {
		in.Close()
		outR.Close()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	}()
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	s := &session{t: t, cmd: cmd, stderr: stderr}
	baseGo, baseRSS := s.goroutines(), rssKB(t, cmd.Process.Pid)

	var sent atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			if _, err := io.WriteString(in, call(i)); err != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until the client's writes stop getting through (or all went through,
	// which is the failure: nothing held the server back).
	for last, still := int64(-1), 0; still < 10; {
		select {
		case <-done:
			t.Fatalf("the server read all %d calls while none of their answers was read", n)
		case <-time.After(200 * time.Millisecond):
		}
		if cur := sent.Load(); cur == last {
			still++
		} else {
			last, still = cur, 0
		}
	}
	gor, rss := s.goroutines(), rssKB(t, cmd.Process.Pid)
	t.Logf("with %d of %d calls sent and no answer read: %d goroutines (%d at the start), RSS %.1f MB (%.1f MB at the start)",
		sent.Load(), n, gor, baseGo, float64(rss)/1024, float64(baseRSS)/1024)
	if limit := baseGo + 4*256; gor > limit {
		t.Errorf("%d goroutines with answers unread; the bound is %d", gor, limit)
	}
	if rss-baseRSS > 100<<10 {
		t.Errorf("RSS grew by %.1f MB with answers unread; the README bound is 100 MB", float64(rss-baseRSS)/1024)
	}

	// The client reads: every call is answered, with its result.
	for answered := 0; answered < n; {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("after %d answers: %v", answered, err)
		}
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil || m.ID == 0 {
			continue // a notification
		}
		want := strconv.Itoa(m.ID * 2)
		if m.ID%every != 0 {
			want = "code"
		}
		if m.Result == nil || !strings.Contains(string(m.Result), want) {
			t.Fatalf("call %d answered %s", m.ID, line)
		}
		answered++
	}
	<-done
}

// startPiped starts the server with its stdout a pipe the test reads only when it
// chooses, and initializes it (reading that answer).
func startPiped(t *testing.T) (cmd *exec.Cmd, in io.WriteCloser, outR *os.File, out *bufio.Reader, stderr *syncBuffer) {
	t.Helper()
	cmd = exec.Command(bin)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "AUTOBOX_STATE_DIR=" + t.TempDir()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = outW
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	out = bufio.NewReader(outR)
	io.WriteString(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"piped","version":"1"}}}`+"\n")
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
		t.Fatalf("initialize: %q, %v", line, err)
	}
	return cmd, in, outR, out, stderr
}

// rssKB reads a process's resident set size from /proc.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.Fields(v)[0])
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

//go:build linux

package test

import (
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestExposedPortBurst (issue 32, item 8): more clients at once than the
// relay of an exposed port carries (128 connections) wait their turn, as at
// any busy server, instead of having their connections accepted and closed.
// 300 connections (600 sockets through the relay) are opened and held before any sends its request; then all
// send, and every one gets the page (each closes once it has it).
func TestExposedPortBurst(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("exposed ports are relayed only from a network namespace of the session's own; landlock-only shares the host's network")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the server is python3's http.server")
	}
	s := start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "index.html"), "hello from the session\n")
	// http.server with a listen queue as long as the relay's burst, so that
	// the server's own queue (5 by default) does not slow the test.
	server := `import functools, http.server as h
h.ThreadingHTTPServer.request_queue_size = 1024
h.test(HandlerClass=functools.partial(h.SimpleHTTPRequestHandler, directory="/mnt/site"), ServerClass=h.ThreadingHTTPServer, port=8000, bind="127.0.0.1")`
	var o portsOut
	if isErr := s.call("exec_command", map[string]any{"command": []string{"python3", "-u", "-c", server}, "expose": []int{8000}, "timeoutMs": 120000, "yieldMs": 3000,
		"mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/site", "mode": "ro"}}}, &o); isErr || !o.Running {
		t.Fatalf("starting the server: %+v", o)
	}
	defer s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	s.until(o.SessionID, "Serving HTTP", o.Stdout+o.Stderr)
	if len(o.Ports) != 1 {
		t.Fatalf("ports: %+v", o.Ports)
	}
	addr := strings.TrimPrefix(o.Ports[0].URL, "http://")
	if body, err := httpGet(o.Ports[0].URL); err != nil || body != "hello from the session\n" {
		t.Fatalf("control: one GET of %s: %q, %v", addr, body, err)
	}
	const n = 300
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", len(conns)+1, n, err)
		}
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for _, c := range conns {
		wg.Go(func() {
			// Far beyond what it needs: answered is the check, not how fast.
			c.SetDeadline(time.Now().Add(3 * time.Minute))
			_, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
			var b []byte
			if err == nil {
				b, err = io.ReadAll(c)
			}
			c.Close() // as an HTTP/1.0 client does: the relay's slot is free
			if err != nil || !strings.HasSuffix(string(b), "hello from the session\n") {
				mu.Lock()
				failed = append(failed, strings.TrimSpace(strings.SplitN(string(b)+" "+errText(err), "\n", 2)[0]))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d connections held at once got no page; the first: %q", len(failed), n, failed[0])
	}
}

func errText(err error) string {
	if err == nil {
		return "(no error)"
	}
	return err.Error()
}

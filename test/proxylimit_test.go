//go:build linux

package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testnet"
)

// TestProxyConnectionsBounded (issue 20 item 9): a call that opens hundreds
// of connections through the proxy and holds them cannot make another call
// fail. The server runs with 400 open files (prlimit), where 300 held
// tunnels (two descriptors each) would leave it none: before the bound,
// every other call then failed. Now the first call gets its share, the rest
// of its connections are closed at once and recorded as denials, and a
// second call, made while the first holds its share, reaches its host.
func TestProxyConnectionsBounded(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("allowHosts needs a network namespace for the command, which mode %s lacks", hostMode())
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit(1) to start the server with few open files")
	}
	s := startArgv(t, nil, []string{prlimit, "--nofile=400:400", bin})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer web.Close()
	holdHP, webHP := testnet.Hold(t), strings.TrimPrefix(web.URL, "http://")
	out := t.TempDir()
	os.Chmod(out, 0o777)
	script := `import socket, sys, time
target = sys.argv[1]
held, ok = [], 0
for i in range(300):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        held.append(s)
    except OSError:
        pass
for s in held:
    try:
        s.settimeout(10)
        if s.recv(64).startswith(b"HTTP/1.1 200"):
            ok += 1
    except OSError:
        pass
open("/mnt/out/count.tmp", "w").write(str(ok))
import os; os.rename("/mnt/out/count.tmp", "/mnt/out/count")
while not os.path.exists("/mnt/out/done"):
    time.sleep(0.05)
print("held", ok)`
	var wg sync.WaitGroup
	var first netOut
	firstDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(firstDone)
		s.call("exec_command", map[string]any{"command": []string{"python3", "-c", script, holdHP},
			"allowHosts": []string{holdHP}, "timeoutMs": 30000, "maxOpenFiles": 350,
			"mounts": []map[string]any{{"hostPath": out, "sandboxPath": "/mnt/out", "mode": "rw"}}}, &first)
	}()
	defer func() { os.WriteFile(filepath.Join(out, "done"), nil, 0o644); wg.Wait() }()
	for deadline := time.Now().Add(25 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(out, "count")); err == nil {
			break
		}
		select {
		case <-firstDone:
			t.Fatalf("the first call ended before it held its connections: %+v", first)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call did not open its connections")
		}
	}
	// While the first call holds what it got: another call reaches its host.
	var second netOut
	s.call("exec_command", map[string]any{"command": bash("curl -sS http://" + webHP + "/"), "allowHosts": []string{webHP}, "timeoutMs": 20000, "maxOpenFiles": 350}, &second)
	if second.code() != 0 || second.Stdout != "hello" {
		t.Errorf("a second call while the first holds its connections: %+v", second)
	}
	os.WriteFile(filepath.Join(out, "done"), nil, 0o644)
	wg.Wait()
	if !strings.HasPrefix(first.Stdout, "held ") || first.Stdout == "held 0\n" || first.Stdout == "held 300\n" {
		t.Errorf("the first call: %+v", first)
	}
	denied := false
	if first.Network != nil {
		for _, d := range first.Network.Denied {
			denied = denied || strings.Contains(d.Reason, "too many connections at once")
		}
	}
	if !denied {
		t.Errorf("the first call's connections past its share are not recorded: %+v", first.Network)
	}
	t.Logf("first call: %s", strings.TrimSpace(first.Stdout))
}

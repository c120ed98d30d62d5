//go:build linux

package test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail"
)

// Session ports (README "Dev servers"): a server that a session runs in its own
// network is reached from a later call that names it in allowHosts
// (session:ID:PORT), and from the host through expose; nothing else of the
// session's network is, and an exposed port closes with the session.

// portsOut is a session's answer with its exposed ports.
type portsOut struct {
	sessOut
	Ports []struct {
		Port int    `json:"port"`
		URL  string `json:"url"`
		Note string `json:"note"`
	} `json:"ports"`
}

// devServer starts a session serving a page with python3 on port 8000 and
// 8001 of its own 127.0.0.1 and 8003 of its ::1 (no network), exposing 8000,
// and returns its answer.
func devServer(t *testing.T, s *session) portsOut { return devServerWith(t, s, nil) }

// devServerWith is devServer with more exec_command arguments (its network).
func devServerWith(t *testing.T, s *session, more map[string]any) portsOut {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the dev server is python3 -m http.server")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "index.html"), "hello from the session\n")
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/site", "mode": "ro"}}
	script := "python3 -m http.server 8001 --bind 127.0.0.1 --directory /mnt/site >/dev/null 2>&1 & " +
		"python3 -m http.server 8003 --bind ::1 --directory /mnt/site >/dev/null 2>&1 & " +
		"exec python3 -u -m http.server 8000 --bind 127.0.0.1 --directory /mnt/site"
	var o portsOut
	args := map[string]any{"command": bash(script), "mounts": mounts, "expose": []int{8000}, "timeoutMs": 120000, "yieldMs": 3000}
	for k, v := range more {
		args[k] = v
	}
	if isErr := s.call("exec_command", args, &o); isErr || !o.Running {
		t.Fatalf("starting the dev server: %+v", o)
	}
	s.until(o.SessionID, "Serving HTTP", o.Stdout+o.Stderr)
	return o
}

// curlUntil runs curl in a call with allowHosts hosts until it prints
// something (the server may still be starting), at most a few times.
func curlUntil(s *session, url string, hosts []string) execOut {
	var got execOut
	for i := 0; i < 20; i++ {
		args := map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", url}, "timeoutMs": 10000}
		if hosts != nil {
			args["allowHosts"] = hosts
		}
		got, _ = s.exec(args)
		if got.Stdout != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return got
}

func TestSessionPorts(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("session ports need network namespaces; landlock-only is TestSessionPortsWithoutNamespaces")
	}
	s := start(t)
	o := devServer(t, s)
	entry := "session:" + o.SessionID + ":8000"

	// A later call that names the port finds it at its own localhost:8000.
	if got := curlUntil(s, "http://127.0.0.1:8000/", []string{entry}); got.Stdout != "hello from the session\n" {
		t.Errorf("curl 127.0.0.1:8000 with allowHosts %s: %+v", entry, got)
	}
	if got := curlUntil(s, "http://localhost:8000/", []string{entry}); got.Stdout != "hello from the session\n" {
		t.Errorf("curl localhost:8000 (::1 or 127.0.0.1) with allowHosts %s: %+v", entry, got)
	}
	// With a host entry too the proxy variables are set, and curl sends
	// localhost:8000 to the proxy, which takes it to the session as well.
	both := []string{entry, "example.com"}
	if got := curlUntil(s, "http://localhost:8000/", both); got.Stdout != "hello from the session\n" {
		t.Errorf("curl through the proxy with allowHosts %v: %+v", both, got)
	}
	var viaProxy struct {
		execOut
		Network struct {
			Allowed []struct {
				Host string `json:"host"`
				Port int    `json:"port"`
			} `json:"allowed"`
		} `json:"network"`
	}
	s.call("exec_command", map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://localhost:8000/"}, "allowHosts": both, "timeoutMs": 10000}, &viaProxy)
	if a := viaProxy.Network.Allowed; viaProxy.Stdout != "hello from the session\n" || len(a) != 1 || a[0].Host != "session:"+o.SessionID || a[0].Port != 8000 {
		t.Errorf("the proxy's record of the session's port: %+v", viaProxy)
	}
	// Nothing else: no entry, no session port; the session's other port, not
	// named, stays the session's own.
	if got, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://127.0.0.1:8000/"}, "timeoutMs": 10000}); got.code() == 0 || strings.Contains(got.Stdout, "hello") {
		t.Errorf("curl without the entry reached the session: %+v", got)
	}
	if got, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://127.0.0.1:8001/"}, "allowHosts": []string{entry}, "timeoutMs": 10000}); got.code() == 0 || strings.Contains(got.Stdout, "hello") {
		t.Errorf("curl of the session's port 8001, with only 8000 named: %+v", got)
	}
	// The positive control of that: 8001 serves, when named.
	if got := curlUntil(s, "http://127.0.0.1:8001/", []string{"session:" + o.SessionID + ":8001"}); got.Stdout != "hello from the session\n" {
		t.Errorf("curl of the session's port 8001 named: %+v", got)
	}
	// A server on the session's ::1 alone (Node's "localhost" may be that).
	if got := curlUntil(s, "http://127.0.0.1:8003/", []string{"session:" + o.SessionID + ":8003"}); got.Stdout != "hello from the session\n" {
		t.Errorf("curl of the session's [::1]:8003: %+v", got)
	}
	// A port nothing listens on in the session: the call says so.
	if got, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://127.0.0.1:8002/"}, "allowHosts": []string{"session:" + o.SessionID + ":8002"}, "timeoutMs": 10000}); got.code() == 0 || !strings.Contains(got.Stderr, "nothing listens on port 8002") {
		t.Errorf("curl of a port nothing listens on: %+v", got)
	}

	// The exposed port answers on the host's loopback, from this process.
	if len(o.Ports) != 1 || o.Ports[0].Port != 8000 || !strings.HasPrefix(o.Ports[0].URL, "http://127.0.0.1:") {
		t.Fatalf("ports of the first answer: %+v", o.Ports)
	}
	url := o.Ports[0].URL
	body, err := httpGet(url)
	if err != nil || body != "hello from the session\n" {
		t.Errorf("GET %s from the host: %q, %v", url, body, err)
	}
	var p portsOut
	s.call("exec_session", map[string]any{"sessionId": o.SessionID, "action": "poll"}, &p)
	if len(p.Ports) != 1 || p.Ports[0].URL != url {
		t.Errorf("a poll's ports: %+v, want %s", p.Ports, url)
	}
	var l struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Ports     []struct {
				URL string `json:"url"`
			} `json:"ports"`
		} `json:"sessions"`
	}
	s.call("exec_session", map[string]any{"action": "list"}, &l)
	if len(l.Sessions) != 1 || len(l.Sessions[0].Ports) != 1 || l.Sessions[0].Ports[0].URL != url {
		t.Errorf("list's ports: %+v, want %s", l, url)
	}
	// Once the session ends, the port is closed, and the entry refused.
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
	if _, err := httpGet(url); err == nil {
		t.Errorf("GET %s answered after the session ended", url)
	}
	if got, isErr := s.exec(map[string]any{"command": []string{"true"}, "allowHosts": []string{entry}}); !isErr || !strings.Contains(got.Stderr, "no running session") {
		t.Errorf("an entry naming an ended session: %+v", got)
	}
}

// TestSessionPortsRefused: what cannot be done is refused with what to do.
func TestSessionPortsRefused(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:s-0:3000"}}, "no running session"},
		{map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:s-0"}}, "session:SESSION_ID:PORT"},
		{map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:s-0:3128"}}, "proxy"},
		{map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:s-0:3000"}, "allowNetwork": true}, "expose"},
		{map[string]any{"command": []string{"true"}, "expose": []int{3000}}, "give yieldMs"},
	} {
		got, isErr := s.exec(tc.args)
		if !namespaced() && tc.want == "no running session" {
			tc.want = "network namespace of its own"
		}
		if !isErr || !strings.Contains(got.Stderr, tc.want) {
			t.Errorf("%v: want a refusal saying %q, got %+v", tc.args, tc.want, got)
		}
	}
}

// TestSessionPortsWithoutNamespaces: in landlock-only mode a session has no
// network of its own. Without network it cannot listen, so expose is refused;
// with allowNetwork it listens on the host's network, and expose reports that
// port as it is.
func TestSessionPortsWithoutNamespaces(t *testing.T) {
	requireSandbox(t)
	s := startEnv(t, []string{jail.NoNamespacesEnv + "=1"})
	var o portsOut
	s.call("exec_command", map[string]any{"command": []string{"sleep", "30"}, "expose": []int{8000}, "yieldMs": 0}, &o)
	if o.Running || !strings.Contains(o.Stderr, "allowNetwork") || !strings.Contains(o.Stderr, "network namespace of its own") {
		t.Errorf("expose without namespaces nor network: %+v", o)
	}
	o = portsOut{}
	if isErr := s.call("exec_command", map[string]any{"command": []string{"sleep", "30"}, "expose": []int{8000}, "allowNetwork": true, "yieldMs": 0}, &o); isErr || !o.Running {
		t.Fatalf("expose with allowNetwork: %+v", o)
	}
	if len(o.Ports) != 1 || o.Ports[0].URL != "http://127.0.0.1:8000" || !strings.Contains(o.Ports[0].Note, "host's network") {
		t.Errorf("ports of a session on the host's network: %+v", o.Ports)
	}
	if got, isErr := s.exec(map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:" + o.SessionID + ":8000"}}); !isErr || !strings.Contains(got.Stderr, "network namespace of its own") {
		t.Errorf("a session entry without namespaces: %+v", got)
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("status %s", resp.Status)
	}
	return string(b), err
}

// TestSessionPortsKeepSessionInUse: a connection to a session's exposed port
// counts as a use of the session, so a dev server the browser is using does
// not idle out; once it closes, the idle limit counts again.
func TestSessionPortsKeepSessionInUse(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("session ports need network namespaces")
	}
	s := start(t, "serve", "--session-idle", "1s")
	o := devServer(t, s)
	if len(o.Ports) != 1 {
		t.Fatalf("ports: %+v", o.Ports)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(o.Ports[0].URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// Half a request: the server waits for the rest, the connection stays open.
	if _, err := conn.Write([]byte("GET / HTTP/1.0\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if p, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll"}); isErr || !p.Running {
		t.Errorf("a session whose port was in use idled out: %+v", p)
	}
	conn.Write([]byte("\r\n"))
	io.ReadAll(conn)
	conn.Close()
	s.awaitListed(o.SessionID, "") // list is no use of it
	if p, isErr := s.sess(map[string]any{"sessionId": o.SessionID, "action": "poll"}); !isErr || !strings.Contains(p.Error, "idle limit") {
		t.Errorf("the session, idle after its port's connection closed: %+v", p)
	}
}

// TestCLISessionPorts: the command line's --expose and --allow-host
// session:ID:PORT, the second call run beside the session in the session
// server.
func TestCLISessionPorts(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("session ports need network namespaces")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the dev server is python3 -m http.server")
	}
	h := newCLIHome(t)
	h.sessions = true
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "index.html"), "hello from the session\n")
	r := h.run("", "exec", "--yield", "3s", "--timeout", "2m", "--expose", "8000", "--mount", dir+":/mnt/site", "--",
		"python3", "-u", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/mnt/site")
	id := strings.TrimSpace(r.stdout)
	_, url, found := strings.Cut(r.stderr, "port 8000 of the session is at ")
	url, _, _ = strings.Cut(url, " ")
	if r.code != 0 || !strings.HasPrefix(id, "s-") || !found {
		t.Fatalf("exec --yield --expose: %s", r)
	}
	for out, i := r.stderr, 0; !strings.Contains(out, "Serving HTTP") && i < 10; i++ {
		p := h.run("", "session", "poll", "--yield", "5s", id)
		out += p.stdout + p.stderr
	}
	var c cliRun
	for i := 0; i < 20; i++ {
		if c = h.run("", "exec", "--allow-host", "session:"+id+":8000", "--", "curl", "-sS", "--max-time", "5", "http://localhost:8000/"); c.stdout != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.want(c, 0, "hello from the session\n", "")
	h.want(h.run("", "session", "list"), 0, id+": port 8000 is at "+url+"\n", "")
	if body, err := httpGet(url); err != nil || body != "hello from the session\n" {
		t.Errorf("GET %s: %q, %v", url, body, err)
	}
	h.run("", "session", "close", id)
	if _, err := httpGet(url); err == nil {
		t.Errorf("GET %s answered after the session was closed", url)
	}
}

// TestSessionPortsProxied: a session with allowHosts of its own (its network
// holds the proxy's listeners, and the transparent path's rules where
// nf_tables works) serves as well, to a later call with allowHosts whose
// client ignores the proxy variables (curl --noproxy), by the command's own
// localhost; execute_js refuses the entry with why.
func TestSessionPortsProxied(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skip("session ports need network namespaces")
	}
	s := start(t)
	o := devServerWith(t, s, map[string]any{"allowHosts": []string{"example.com"}})
	entry := "session:" + o.SessionID + ":8000"
	var got execOut
	for i := 0; i < 20 && got.Stdout == ""; i++ {
		got, _ = s.exec(map[string]any{"command": []string{"curl", "-sS", "--noproxy", "*", "--max-time", "5", "http://127.0.0.1:8000/"}, "allowHosts": []string{entry, "example.com"}, "timeoutMs": 10000})
	}
	if got.Stdout != "hello from the session\n" {
		t.Errorf("curl --noproxy from a proxied call: %+v", got)
	}
	if body, err := httpGet(o.Ports[0].URL); err != nil || body != "hello from the session\n" {
		t.Errorf("the exposed port of a proxied session: %q, %v", body, err)
	}
	res := s.callRaw("execute_js", map[string]any{"code": "1", "allowHosts": []string{entry}})
	if text := textOf(res); !res.IsError || !strings.Contains(text, "for exec_command") {
		t.Errorf("execute_js with a session entry: %s", text)
	}
	s.sess(map[string]any{"sessionId": o.SessionID, "action": "close"})
}

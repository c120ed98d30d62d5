//go:build linux

package test

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// Network by host (issue 13), end to end: servers this test runs on the host's
// loopback (HTTP, HTTPS with its own CA, git over smart HTTP, a raw TCP port),
// reached from sandboxed commands through the proxy by ordinary tools, and
// every way around the proxy refused, each with its positive control.

// netFixture is the host side: the servers, and a server with names fixed for
// the proxy (AUTOBOX_PROXY_RESOLVE: the test cannot change the machine's DNS).
type netFixture struct {
	s        *session
	web      *httptest.Server // http: /, /redirect (to other.test), /git/ (smart HTTP)
	tls      *httptest.Server // https, certificate for example.com
	raw      net.Listener     // a TCP port that answers "raw\n"
	webPort  string
	tlsPort  string
	rawPort  string
	caDir    string // holds ca.pem, mounted at /mnt/ca
	otherWeb *httptest.Server
}

func newNetFixture(t *testing.T) *netFixture {
	t.Helper()
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("allowHosts needs a network namespace for the command, which mode %s lacks", hostMode())
	}
	f := &netFixture{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) })
	f.otherWeb = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other") }))
	t.Cleanup(f.otherWeb.Close)
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.otherWeb.URL, "http://"))
		http.Redirect(w, r, "http://other.test:"+port+"/", http.StatusFound)
	})
	if git, err := exec.LookPath("git"); err == nil {
		root := t.TempDir()
		servedRepo(t, git, root, nil)
		mux.Handle("/git/", &cgi.Handler{Path: git, Args: []string{"http-backend"}, Root: "/git",
			Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	}
	// On every IPv4 address, so that another loopback address reaches it too.
	f.web = httptest.NewUnstartedServer(mux)
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	f.web.Listener.Close()
	f.web.Listener = ln
	f.web.Start()
	t.Cleanup(f.web.Close)
	f.tls = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello over tls") }))
	t.Cleanup(f.tls.Close)
	if f.raw, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.raw.Close() })
	go func() {
		for {
			c, err := f.raw.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("raw\n"))
			c.Close()
		}
	}()
	port := func(hp string) string { _, p, _ := net.SplitHostPort(hp); return p }
	f.webPort = port(ln.Addr().String())
	f.tlsPort = port(strings.TrimPrefix(f.tls.URL, "https://"))
	f.rawPort = port(f.raw.Addr().String())
	f.caDir = t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.tls.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(f.caDir, "ca.pem"), ca, 0o644); err != nil {
		t.Fatal(err)
	}
	f.s = startEnv(t, []string{"AUTOBOX_PROXY_RESOLVE=web.test=127.0.0.1;example.com=127.0.0.1;other.test=127.0.0.1;internal.test=10.0.0.5;meta.test=169.254.169.254;rebind.test=127.0.0.1>10.0.0.5"})
	return f
}

// hosts is the allowlist of most calls: the test's servers by name, and their
// loopback address, which names resolving to it need (loopback is refused unless
// an entry names it).
func (f *netFixture) hosts(extra ...string) []string {
	return append([]string{
		"web.test:" + f.webPort, "example.com:" + f.tlsPort, "localhost:" + f.rawPort,
		"127.0.0.1:" + f.webPort, "127.0.0.1:" + f.tlsPort,
		"internal.test", "meta.test",
	}, extra...)
}

type netOut struct {
	execOut
	Network *netRecord `json:"network"`
}

func (f *netFixture) run(t *testing.T, hosts []string, script string, extra ...map[string]any) netOut {
	t.Helper()
	args := map[string]any{"command": bash(script), "allowHosts": hosts, "timeoutMs": 20000,
		"mounts": []map[string]any{toolsMount(), {"hostPath": f.caDir, "sandboxPath": "/mnt/ca"}}}
	for _, e := range extra {
		for k, v := range e {
			args[k] = v
		}
	}
	var o netOut
	f.s.call("exec_command", args, &o)
	return o
}

func (o netOut) denied(host string, port int) string {
	if o.Network == nil {
		return ""
	}
	for _, d := range o.Network.Denied {
		if d.Host == host && d.Port == port {
			return d.Reason
		}
	}
	return ""
}

func TestNetworkByHostTools(t *testing.T) {
	f := newNetFixture(t)
	// curl over http and https (the test's CA), through HTTP_PROXY / HTTPS_PROXY.
	o := f.run(t, f.hosts(), fmt.Sprintf(`curl -sS http://web.test:%s/ && echo && SSL_CERT_FILE=/mnt/ca/ca.pem CURL_CA_BUNDLE=/mnt/ca/ca.pem curl -sS https://example.com:%s/`, f.webPort, f.tlsPort))
	if o.code() != 0 || o.Stdout != "hello from web.test:"+f.webPort+"\nhello over tls" {
		t.Errorf("curl: %+v", o)
	}
	if o.Network == nil || len(o.Network.Allowed) != 2 {
		t.Errorf("record of curl: %+v", o.Network)
	}
	// SOCKS5 with the name resolved at the proxy, and a raw TCP port by name.
	o = f.run(t, f.hosts(), fmt.Sprintf(`curl -sS --proxy "$ALL_PROXY" http://web.test:%s/ && echo && curl -sS --proxy "$ALL_PROXY" telnet://localhost:%s </dev/null`, f.webPort, f.rawPort))
	if o.code() != 0 || o.Stdout != "hello from web.test:"+f.webPort+"\nraw\n" {
		t.Errorf("socks5h and a raw port: %+v", o)
	}
	// git over http.
	if _, err := exec.LookPath("git"); err == nil {
		o = f.run(t, f.hosts(), fmt.Sprintf(`git ls-remote http://web.test:%s/git/repo.git`, f.webPort))
		if o.code() != 0 || !strings.Contains(o.Stdout, "refs/heads/main") {
			t.Errorf("git ls-remote over http: %+v", o)
		}
	}
	// python, if the machine has it.
	if _, err := exec.LookPath("python3"); err == nil {
		o = f.run(t, f.hosts(), fmt.Sprintf(`python3 -c 'import urllib.request; print(urllib.request.urlopen("http://web.test:%s/").read().decode())'`, f.webPort))
		if o.code() != 0 || !strings.Contains(o.Stdout, "hello from web.test") {
			t.Errorf("python3 urllib: %+v", o)
		}
	} else {
		t.Log("python3 is not on this machine: its case is skipped")
	}
	// node, if the machine has it: Node reads the proxy variables from version 24
	// (NODE_USE_ENV_PROXY); an older one resolves the name itself and fails closed.
	if _, err := exec.LookPath("node"); err == nil {
		o = f.run(t, f.hosts(), fmt.Sprintf(`node -e 'fetch("http://web.test:%s/").then(r => r.text()).then(t => console.log(t), e => { console.log("failed:", e.cause?.code ?? e.message); process.exit(3) })'`, f.webPort))
		switch {
		case o.code() == 0 && strings.Contains(o.Stdout, "hello from web.test"):
		case o.code() == 3 && o.denied("web.test", 53) != "":
			t.Log("this node ignores proxy variables: it failed closed, and the lookup it tried is recorded")
		default:
			t.Errorf("node fetch: %+v %+v", o, o.Network)
		}
	}
}

func TestNetworkByHostDenials(t *testing.T) {
	f := newNetFixture(t)
	curl := func(url string) string { return `curl -sS -o /dev/null -w '%{http_code}' ` + url }
	for _, c := range []struct {
		what, script string
		host         string
		port         int
		reason       string
	}{
		{"another port on an allowed host", curl(fmt.Sprintf("http://web.test:%s/", f.tlsPort)), "web.test", atoi(f.tlsPort), "port " + f.tlsPort + " not allowed"},
		// (localhost:PORT, in the list, names all of loopback on that port)
		{"another loopback address", curl(fmt.Sprintf("http://127.0.0.2:%s/", f.webPort)), "127.0.0.2", atoi(f.webPort), "port " + f.webPort + " not allowed"},
		{"a host not in the list", curl("http://not-listed.test/"), "not-listed.test", 80, "not in allowHosts"},
		{"a name resolving to a private address", curl("http://internal.test/"), "internal.test", 80, "resolves to a private address 10.0.0.5"},
		{"a name resolving to the metadata address", curl("http://meta.test/"), "meta.test", 80, "resolves to a cloud metadata address 169.254.169.254"},
		{"the metadata address itself", curl("http://169.254.169.254/latest/meta-data/"), "169.254.169.254", 80, "not in allowHosts"},
		{"a redirect to a host not in the list", curl(fmt.Sprintf("-L http://web.test:%s/redirect", f.webPort)), "other.test", atoi(strings.Split(strings.TrimPrefix(f.otherWeb.URL, "http://127.0.0.1:"), "/")[0]), "not in allowHosts"},
	} {
		o := f.run(t, f.hosts(), c.script+`; exit 7`)
		if got := o.denied(c.host, c.port); got != c.reason {
			t.Errorf("%s: denial %q, want %q (%+v)", c.what, got, c.reason, o.Network)
		}
		if !strings.Contains(o.Stdout, "403") || !strings.Contains(o.Stderr, "[autobox: network denied:") {
			t.Errorf("%s: the command saw %q, stderr %q", c.what, o.Stdout, o.Stderr)
		}
	}
	// Positive controls of the same: listed, each works.
	o := f.run(t, f.hosts("web.test:"+f.tlsPort, "127.0.0.2:"+f.webPort, "other.test:"+strings.Split(strings.TrimPrefix(f.otherWeb.URL, "http://127.0.0.1:"), "/")[0], "127.0.0.1:"+strings.Split(strings.TrimPrefix(f.otherWeb.URL, "http://127.0.0.1:"), "/")[0]),
		fmt.Sprintf(`%s; echo; %s; echo; %s`, curl(fmt.Sprintf("-k https://web.test:%s/", f.tlsPort)), curl(fmt.Sprintf("http://127.0.0.2:%s/", f.webPort)), curl(fmt.Sprintf("-L http://web.test:%s/redirect", f.webPort))))
	if o.Stdout != "200\n200\n200" {
		t.Errorf("the same, allowed: %+v %+v", o, o.Network)
	}
}

// TestNetworkByHostNoWayAround: everything that does not go through the proxy
// reaches nothing: the host's loopback directly (TCP and UDP, IPv4 and IPv6,
// on a port no entry names: one that an entry names is put at the command's
// own loopback through the proxy, TestHostLoopbackPorts),
// an outside address, a raw connect(2) from a C program, and DNS, whose lookups
// are recorded. The positive control is the same server through the proxy.
func TestNetworkByHostNoWayAround(t *testing.T) {
	f := newNetFixture(t)
	hosts := f.hosts()
	_, otherPort, _ := net.SplitHostPort(strings.TrimPrefix(f.otherWeb.URL, "http://"))
	probe := func(args ...string) netOut {
		return f.run(t, hosts, "/mnt/tools/probe "+strings.Join(args, " "))
	}
	for _, c := range []struct{ what, args string }{
		{"tcp to the host's loopback", "tcp 127.0.0.1:" + otherPort},
		{"tcp to the host's IPv6 loopback", "tcp [::1]:" + otherPort},
		{"tcp to an outside address", "tcp 93.184.215.14:80"},
		{"udp to an outside address", "udp 8.8.8.8:53"},
		{"udp to an outside IPv6 address", "udp [2001:4860:4860::8888]:53"},
	} {
		o := probe(strings.Fields(c.args)...)
		// With the transparent path, a TCP connection out is accepted by the
		// redirect, then reset, and recorded, even when the probe exits at
		// once (TestNetworkByHostConnectAndExit).
		redirected := o.Stdout == "ok connected\n" && o.denied("93.184.215.14", 80) == "not in allowHosts"
		if !strings.HasPrefix(o.Stdout, "denied:") && !(strings.HasPrefix(c.what, "udp") && o.Stdout == "ok sent\n") && !(c.what == "tcp to an outside address" && redirected) {
			t.Errorf("%s: %+v", c.what, o)
		}
		// The probe may also see the reset before it exits: recorded all the same.
		if ok, _ := transparentHere(); ok && c.what == "tcp to an outside address" && o.denied("93.184.215.14", 80) != "not in allowHosts" {
			t.Errorf("%s: the refusal is not recorded: %+v %+v", c.what, o, o.Network)
		}
	}
	// A UDP datagram is sent, and goes nowhere: only loopback is up.
	o := f.run(t, hosts, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
	if strings.TrimSpace(o.Stdout) != "lo" {
		t.Errorf("interfaces in the command's network: %q", o.Stdout)
	}
	if gcc, err := exec.LookPath("gcc"); err == nil {
		dir := t.TempDir()
		src := filepath.Join(dir, "connect.c")
		os.WriteFile(src, []byte(`#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <arpa/inet.h>
#include <sys/socket.h>
int main(int argc, char **argv) {
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons(atoi(argv[2]));
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) { printf("denied: %s\n", strerror(errno)); return 1; }
	printf("ok connected\n");
	return 0;
}
`), 0o644)
		if out, err := exec.Command(gcc, "-static", "-o", filepath.Join(dir, "connect"), src).CombinedOutput(); err != nil {
			t.Logf("no static C program here (%v: %s): the raw connect case is skipped", err, out)
		} else {
			m := []map[string]any{toolsMount(), {"hostPath": dir, "sandboxPath": "/mnt/c"}}
			o := f.run(t, hosts, "/mnt/c/connect 127.0.0.1 "+otherPort, map[string]any{"mounts": m})
			if !strings.HasPrefix(o.Stdout, "denied:") {
				t.Errorf("raw connect(2) to the host's loopback: %+v", o)
			}
			// Positive control: the same program reaches the proxy port.
			o = f.run(t, hosts, fmt.Sprintf("/mnt/c/connect 127.0.0.1 %d", jail.ProxyPort), map[string]any{"mounts": m})
			if o.Stdout != "ok connected\n" {
				t.Errorf("raw connect(2) to the proxy: %+v", o)
			}
		}
	} else {
		t.Log("no gcc here: the raw connect(2) case is skipped")
	}
	// Without the transparent path DNS is not offered: a lookup fails at once
	// and is recorded. (With it, the list answers: transparent_test.go.)
	if ok, _ := transparentHere(); !ok {
		o = f.run(t, hosts, "getent hosts web.test; exit 5")
		if o.code() != 5 || !strings.Contains(o.denied("web.test", 53), "there is no DNS inside") {
			t.Errorf("getent: %+v %+v", o, o.Network)
		}
	}
	// Positive control: the same server through the proxy.
	o = f.run(t, hosts, fmt.Sprintf("curl -sS http://web.test:%s/", f.webPort))
	if o.code() != 0 || !strings.HasPrefix(o.Stdout, "hello") {
		t.Errorf("through the proxy: %+v", o)
	}
}

func TestNetworkByHostFetch(t *testing.T) {
	f := newNetFixture(t)
	js := func(code string, hosts []string) jsOut {
		var o jsOut
		f.s.call("execute_js", map[string]any{"code": code, "allowHosts": hosts, "timeoutMs": 8000}, &o)
		return o
	}
	o := js(fmt.Sprintf(`const r = await fetch("http://web.test:%s/"); [r.status, await r.text()]`, f.webPort), f.hosts())
	if !o.OK || string(o.Result) != fmt.Sprintf(`[200,"hello from web.test:%s"]`, f.webPort) {
		t.Errorf("allowed fetch: %+v %s", o, o.Result)
	}
	for _, c := range []struct{ url, want string }{
		{"http://not-listed.test/", "not in allowHosts"},
		{"http://internal.test/", "resolves to a private address 10.0.0.5"},
		{fmt.Sprintf("http://web.test:%s/redirect", f.webPort), "other.test"},
	} {
		o := js(fmt.Sprintf(`await fetch(%q)`, c.url), f.hosts())
		if o.OK || !strings.Contains(o.err(), c.want) {
			t.Errorf("fetch %s: %+v (%q)", c.url, o, o.err())
		}
	}
}

func TestNetworkByHostArguments(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"allowHosts": []string{"*:443"}}, `allowHosts[0] \"*:443\": a wildcard`},
		{map[string]any{"allowHosts": []string{"ok.test", "https://x.test"}}, `allowHosts[1] \"https://x.test\": a URL`},
		{map[string]any{"allowHosts": []string{"x.test"}, "allowNetwork": true}, "allowHosts and allowNetwork together"},
	} {
		for _, tool := range []string{"exec_command", "execute_js"} {
			args := map[string]any{"command": []string{"true"}, "code": "1"}
			if tool == "exec_command" {
				delete(args, "code")
			} else {
				delete(args, "command")
			}
			for k, v := range c.args {
				args[k] = v
			}
			res := s.callRaw(tool, args)
			if !res.IsError || !strings.Contains(textOf(res), c.want) {
				t.Errorf("%s %v: %s", tool, c.args, textOf(res))
			}
		}
	}
	// Without namespaces (an unprivileged user's server), allowHosts cannot be
	// enforced for a command and is refused, saying why; fetch still takes it.
	u := startEnv(t, []string{jail.NoNamespacesEnv + "=1"})
	res := u.callRaw("exec_command", map[string]any{"command": []string{"true"}, "allowHosts": []string{"example.com"}})
	if !res.IsError || !strings.Contains(textOf(res), "network namespace of its own") {
		t.Errorf("allowHosts without namespaces: %s", textOf(res))
	}
	var o jsOut
	u.call("execute_js", map[string]any{"code": `await fetch("http://not-listed.test/")`, "allowHosts": []string{"example.com"}}, &o)
	if o.OK || !strings.Contains(o.err(), "not in allowHosts") {
		t.Errorf("fetch without namespaces: %+v", o)
	}
}

// TestNetworkByHostServerList: the server's --allow-host list is every call's
// default and ceiling.
func TestNetworkByHostServerList(t *testing.T) {
	f := newNetFixture(t)
	s := startEnv(t, []string{"AUTOBOX_PROXY_RESOLVE=web.test=127.0.0.1"}, "serve", "--allow-host", "web.test:"+f.webPort, "--allow-host", "127.0.0.1:"+f.webPort)
	var o netOut
	s.call("exec_command", map[string]any{"command": bash(fmt.Sprintf("curl -sS http://web.test:%s/", f.webPort))}, &o)
	if o.code() != 0 || !strings.HasPrefix(o.Stdout, "hello") {
		t.Errorf("the server's list by default: %+v", o)
	}
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "allowHosts": []string{"example.com"}})
	if !res.IsError || !strings.Contains(textOf(res), "not within the server's list (autobox serve --allow-host: ") {
		t.Errorf("widening: %s", textOf(res))
	}
	res = s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "allowNetwork": true})
	if !res.IsError || !strings.Contains(textOf(res), "only the hosts of its list (autobox serve --allow-host: ") {
		t.Errorf("allowNetwork on a listed server: %s", textOf(res))
	}
	// Narrowed to nothing: no network at all.
	var none netOut
	s.call("exec_command", map[string]any{"command": bash(fmt.Sprintf("curl -sS -m 2 http://web.test:%s/; exit 4", f.webPort)), "allowHosts": []string{}}, &none)
	if none.code() != 4 || none.Network != nil {
		t.Errorf("narrowed to nothing: %+v", none)
	}
}

func atoi(s string) int {
	n := 0
	fmt.Sscan(s, &n)
	return n
}

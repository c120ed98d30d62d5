//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// Network by host for every program (issue 23), end to end: programs that
// ignore the proxy variables resolve through the sandbox's resolver and
// connect themselves; each reaches the allowed host, and each is refused,
// with a record, an unlisted host, another port, the metadata address and a
// name that resolves to a private address. The servers are the network
// fixture's, named only for the proxy (AUTOBOX_PROXY_RESOLVE).

// unsetProxy makes a script's tools ignore the proxy: the variables gone.
const unsetProxy = "unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy NODE_USE_ENV_PROXY npm_config_proxy npm_config_https_proxy; "

// transparentHere reports whether this process's servers give commands the
// transparent path, as their doctor says, and if not why.
var transparentHere = sync.OnceValues(func() (bool, string) {
	out, _ := exec.Command(bin, "doctor", "--json").Output()
	var r struct {
		Checks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return false, "doctor --json: " + err.Error()
	}
	for _, c := range r.Checks {
		if c.Name == "network by host, every program" {
			return c.Status == "ok", c.Detail
		}
	}
	return false, "doctor has no line for it (no network namespaces here)"
})

func requireTransparent(t *testing.T) {
	t.Helper()
	if ok, why := transparentHere(); !ok {
		t.Skipf("no transparent path on this host (%s): tools that ignore the proxy variables fail closed there", why)
	}
}

func TestNetworkTransparentTools(t *testing.T) {
	f := newNetFixture(t)
	requireTransparent(t)
	hosts := f.hosts("web.test:"+f.rawPort, "127.0.0.1:"+f.rawPort)
	type tool struct {
		name, need string
		// get is a script that prints what host:port answers, for an HTTP
		// server (web) or the raw one.
		get func(host, port string) string
		raw bool // talks to the raw port, not HTTP
		// reached, if set, is what the tool prints when it reached the
		// server, failing (psql finds no database there).
		reached string
	}
	tools := []tool{
		{"curl --noproxy", "curl", func(h, p string) string {
			return fmt.Sprintf(`curl -sS --noproxy '*' http://%s:%s/`, h, p)
		}, false, ""},
		{"node's built-in fetch", "node", func(h, p string) string {
			return fmt.Sprintf(`node -e 'fetch("http://%s:%s/").then(r => r.text()).then(t => console.log(t), e => { console.log("failed:", e.cause?.code ?? e.message); process.exit(3) })'`, h, p)
		}, false, ""},
		{"a Go program (its own resolver and transport)", "", func(h, p string) string {
			return fmt.Sprintf(`/mnt/tools/probe http-get http://%s:%s/`, h, p)
		}, false, ""},
		{"git over http", "git", func(h, p string) string {
			return fmt.Sprintf(`git ls-remote http://%s:%s/git/repo.git`, h, p)
		}, false, ""},
		{"raw TCP from bash", "bash", func(h, p string) string {
			return fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && head -c 64 <&3`, h, p)
		}, true, ""},
		{"raw TCP from python", "python3", func(h, p string) string {
			return fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection(("%s", %s), 5); print(s.recv(64).decode(), end="")'`, h, p)
		}, true, ""},
		{"psql", "psql", func(h, p string) string {
			return fmt.Sprintf(`psql "host=%s port=%s user=x dbname=x sslmode=disable connect_timeout=5" -c 'select 1' 2>&1`, h, p)
		}, true, "expected authentication request from server, but received r"},
	}
	for _, tl := range tools {
		if tl.need != "" {
			if _, err := exec.LookPath(tl.need); err != nil {
				t.Logf("%s: no %s on this machine, skipped", tl.name, tl.need)
				continue
			}
		}
		allowedPort, otherPort, want := f.webPort, f.tlsPort, "hello from web.test:"+f.webPort
		if tl.raw {
			allowedPort, want = f.rawPort, "raw"
		}
		if tl.need == "git" {
			want = "refs/heads/main"
		}
		if tl.reached != "" {
			want = tl.reached
		}
		cases := []struct {
			script      string
			host        string
			port        int // 0: refused at the lookup
			reason      string
			shouldReach bool
		}{
			{script: tl.get("web.test", allowedPort), shouldReach: true},
			{script: tl.get("not-listed.test", allowedPort), host: "not-listed.test", reason: "not in allowHosts"},
			{script: tl.get("web.test", otherPort), host: "web.test", port: atoi(otherPort), reason: "port " + otherPort + " not allowed"},
			{script: tl.get("169.254.169.254", "80"), host: "169.254.169.254", port: 80, reason: "not in allowHosts"},
			{script: tl.get("internal.test", "80"), host: "internal.test", reason: "resolves to a private address 10.0.0.5"},
		}
		var script strings.Builder
		script.WriteString(unsetProxy)
		for i, c := range cases {
			fmt.Fprintf(&script, "echo '[case %d]'; %s; echo; echo \"[rc $?]\"; ", i, c.script)
		}
		o := f.run(t, hosts, script.String())
		parts := strings.Split(o.Stdout, "[case ")
		if len(parts) != len(cases)+1 {
			t.Errorf("%s: output %q, stderr %q", tl.name, o.Stdout, o.Stderr)
			continue
		}
		for i, c := range cases {
			out := parts[i+1]
			ok := strings.Contains(out, "[rc 0]")
			if c.shouldReach {
				if !ok && tl.reached == "" || !strings.Contains(out, want) {
					t.Errorf("%s: the allowed host: %q (stderr %q, network %+v)", tl.name, out, o.Stderr, o.Network)
				}
				continue
			}
			if ok && strings.Contains(out, "hello") {
				t.Errorf("%s: %s:%d was reached: %q", tl.name, c.host, c.port, out)
			}
			if got := o.denied(c.host, c.port); got != c.reason {
				t.Errorf("%s: denial of %s:%d %q, want %q (%+v)", tl.name, c.host, c.port, got, c.reason, o.Network)
			}
		}
	}
}

// TestNetworkTransparentRebinding: a name whose answer changes between the
// command's lookup and its connection (first the allowed test server, then a
// private address) does not move the connection: it goes to the address
// checked at the lookup. The proxy variables' path, which resolves at the
// connection, sees the second answer and refuses it.
func TestNetworkTransparentRebinding(t *testing.T) {
	f := newNetFixture(t)
	requireTransparent(t)
	o := f.run(t, f.hosts("rebind.test:"+f.webPort), fmt.Sprintf(
		`curl -sS --noproxy '*' http://rebind.test:%[1]s/; echo; curl -sS -o /dev/null -w '%%{http_code}' http://rebind.test:%[1]s/`, f.webPort))
	if !strings.HasPrefix(o.Stdout, "hello from rebind.test:"+f.webPort+"\n") {
		t.Errorf("the connection after the lookup: %+v %+v", o, o.Network)
	}
	if got := o.denied("rebind.test", atoi(f.webPort)); got != "resolves to a private address 10.0.0.5" || !strings.HasSuffix(o.Stdout, "403") {
		t.Errorf("the name's second answer: denial %q, output %q", got, o.Stdout)
	}
}

// TestNetworkTransparentOnlyThroughAutobox: with the transparent path, what
// does not go through the proxy still reaches nothing: UDP anywhere but the
// resolver, TCP to a port of the host's loopback no entry names; DNS to another server is answered by
// the same policy. The positive control is the same lookup of an allowed name.
func TestNetworkTransparentOnlyThroughAutobox(t *testing.T) {
	f := newNetFixture(t)
	requireTransparent(t)
	// (A port of the host's loopback that an entry names is put at the
	// command's own, through the proxy: TestHostLoopbackPorts. This one is
	// named by none.)
	_, otherPort, _ := net.SplitHostPort(strings.TrimPrefix(f.otherWeb.URL, "http://"))
	o := f.run(t, f.hosts(), unsetProxy+`/mnt/tools/probe udp 8.8.8.8:9; /mnt/tools/probe udp [2001:4860:4860::8888]:9; /mnt/tools/probe tcp-read 127.0.0.1:`+otherPort+`; exit 0`)
	if strings.Count(o.Stdout, "denied:") != 3 {
		t.Errorf("udp out, tcp to the host's loopback: %+v", o)
	}
	// An address literal: only an entry naming it allows it, IPv4 or IPv6.
	// The positive control is this machine's own address, where the web
	// server listens too, named by an entry.
	if own := ownIPv4(); own != "" {
		get := fmt.Sprintf(`curl -sS --noproxy '*' http://%s:%s/; echo; exec 3<>/dev/tcp/2606:4700::1/80 && cat <&3`, own, f.webPort)
		o = f.run(t, f.hosts(own+":"+f.webPort), get)
		if !strings.HasPrefix(o.Stdout, "hello from "+own) {
			t.Errorf("an address literal named by an entry: %+v %+v", o, o.Network)
		}
		o = f.run(t, f.hosts(), get)
		if strings.Contains(o.Stdout, "hello") || o.denied(own, atoi(f.webPort)) != "not in allowHosts" {
			t.Errorf("an address literal not named: %+v %+v", o, o.Network)
		}
		if o.denied("2606:4700::1", 80) != "not in allowHosts" {
			t.Errorf("an IPv6 literal: %+v", o.Network)
		}
	} else {
		t.Log("this machine has no IPv4 address but loopback: the address literal case is skipped")
	}
	// Lookups: an allowed name gets a synthetic address; another is refused
	// and recorded, by the resolver of resolv.conf and by any other server.
	o = f.run(t, f.hosts(), `getent hosts web.test; getent hosts other.test; echo "[$?]"; python3 -c '
import socket, struct
q = struct.pack(">HHHHHH", 7, 0x100, 1, 0, 0, 0) + b"\x06elsewh\x04test\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.sendto(q, ("9.9.9.9", 53))
r = s.recv(512); print("rcode", r[3] & 15)'`)
	if !strings.HasPrefix(o.Stdout, "198.18.") || !strings.Contains(o.Stdout, "[2]") {
		t.Errorf("getent: %+v", o)
	}
	if _, err := exec.LookPath("python3"); err == nil && !strings.Contains(o.Stdout, "rcode 5") {
		t.Errorf("a query to another server: %+v", o)
	}
	names := []string{"other.test"}
	if _, err := exec.LookPath("python3"); err == nil {
		names = append(names, "elsewh.test")
	}
	for _, name := range names {
		if got := o.denied(name, 0); got != "not in allowHosts" {
			t.Errorf("lookup of %s: %q (%+v)", name, got, o.Network)
		}
	}
}

// ownIPv4 is an IPv4 address of this machine's that is not loopback, or "".
func ownIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			return p.Addr().String()
		}
	}
	return ""
}

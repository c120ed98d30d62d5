//go:build linux

package test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// rawLookup is a Python program that asks the command's resolver for the A
// record of argv[1] itself (any bytes in a label, as DNS allows), connects to
// the answer at port argv[2] and prints the HTTP body, or why it could not.
const rawLookup = `import socket, struct, sys
name, port = sys.argv[1], int(sys.argv[2])
ns = [l.split()[1] for l in open('/etc/resolv.conf') if l.startswith('nameserver')][0]
q = struct.pack('>HHHHHH', 0x4242, 0x0100, 1, 0, 0, 0)
for label in name.split('.'):
    b = label.encode(); q += bytes([len(b)]) + b
q += b'\x00' + struct.pack('>HH', 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
s.sendto(q, (ns, 53)); r, _ = s.recvfrom(1500)
if r[3] & 15 or struct.unpack('>H', r[6:8])[0] == 0:
    print('lookup refused'); sys.exit(0)
try:
    c = socket.create_connection((socket.inet_ntoa(r[-4:]), port), timeout=60)
    c.sendall(b'GET / HTTP/1.0\r\nHost: x\r\n\r\n')
    print(c.recv(4096).decode().split('\r\n\r\n', 1)[-1])
except OSError as e:
    print('connect failed', e)
`

// TestAskReachOnlyExact (issue 35 item 1): on the transparent path a command
// looks up names that are allowHosts syntax (a range, a wildcard) and
// connects to the answer. Nobody is asked, nothing is written to alwaysReach,
// and a later server's calls do not reach the host's loopback through it;
// before, the user was asked "reach 127.0.0.0/8:PORT?", and "always" wrote a
// range. Positive control: a plain name looked up the same way is asked about
// as that name and port, and reached once allowed.
func TestAskReachOnlyExact(t *testing.T) {
	f := newReachFixture(t, `{}`)
	requireTransparent(t)
	u := &asked{answer: "always"}
	s := f.startEnv(t, u, []string{"AUTOBOX_PROXY_RESOLVE=plain.test=127.0.0.1"})
	py := unsetProxy + `python3 -c "$PY" "$NAME" ` + f.otherPort
	for _, name := range []string{"127.0.0.0/8", "0.0.0.0/0", "*.test", "*.com"} {
		o := f.curl(t, s, py, map[string]any{"env": []string{"PY=" + rawLookup, "NAME=" + name}})
		if o.Stdout == "other\n" || o.Stdout == "other" {
			t.Errorf("%s: the command reached the other server: %+v", name, o)
		}
		if r := o.denied(name, 0); !strings.Contains(r, "the user was not asked") {
			t.Errorf("%s: the lookup's record %q, want a refusal unasked (%+v)", name, r, o.Network)
		}
	}
	if u.count() != 0 {
		t.Errorf("the user was asked about a range or a wildcard: %q", u.last().Message)
	}
	if b, _ := os.ReadFile(f.policy); strings.Contains(string(b), "alwaysReach") {
		t.Errorf("the ceiling file got alwaysReach entries: %s", b)
	}
	// A later server: the host's loopback port stays out of reach by address.
	s2 := f.start(t, nil)
	if o := f.curl(t, s2, `curl -sS "$OTHER"`, nil); o.Stdout == "other" {
		t.Errorf("a later server's call reached 127.0.0.1:%s: %+v", f.otherPort, o)
	}
	// Positive control: a plain name, asked about as itself.
	u.set("once")
	both := map[string]any{"env": []string{"PY=" + rawLookup, "NAME=plain.test"}, "allowHosts": []string{f.listed, f.other}}
	if o := f.curl(t, s, py, both); strings.TrimSpace(o.Stdout) != "other" {
		t.Errorf("plain.test: %+v %+v", o, o.Network)
	}
	if u.count() != 1 || !strings.Contains(u.last().Message, "reach plain.test:"+f.otherPort+"?") {
		t.Errorf("plain.test: asked %d times", u.count())
	}
}

// TestPolicyNotesPlantedReach: `autobox policy` points out an alwaysReach
// entry that no answer writes (a range, a wildcard), as one planted before
// questions were held to one host would be; not an exact one (the control).
func TestPolicyNotesPlantedReach(t *testing.T) {
	h := newCLIHome(t)
	r := h.run("", "policy", "--policy", writePolicy(t, `{"alwaysReach": ["127.0.0.0/8:8001", "*.test:8001", "ok.test:443"]}`))
	for _, e := range []string{"127.0.0.0/8:8001", "*.test:8001"} {
		if !strings.Contains(r.stdout, `note: alwaysReach "`+e+`" is a range or a wildcard`) {
			t.Errorf("no note for %s: %s", e, r)
		}
	}
	if strings.Contains(r.stdout, `alwaysReach "ok.test:443" is`) {
		t.Errorf("a note for an exact entry: %s", r)
	}
}

// TestAskReachJSOnlyExact (issue 35 item 1, the fetch of execute_js): the
// server fetches for the code, in every mode (landlock-only too, where no
// command has allowHosts), and a URL's host may be allowHosts syntax too
// ("*.test"): nobody is asked and nothing is written to alwaysReach; before,
// the user was asked "reach *.test:PORT?" and "always" wrote a wildcard, and
// the denial told the model the call's allowHosts needed "*.test:PORT".
// Positive control: one address is asked about as itself and fetched.
func TestAskReachJSOnlyExact(t *testing.T) {
	requireSandbox(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "other") }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	f := &reachFixture{policy: writePolicy(t, `{}`)}
	u := &asked{answer: "always"}
	s := f.startEnv(t, u, []string{"AUTOBOX_PROXY_RESOLVE=*.test=127.0.0.1,x.test=127.0.0.1"})
	fetch := func(host string) jsOut {
		o, _ := s.js(map[string]any{"code": `const r = await fetch("http://` + host + `:` + port + `/"); await r.text()`, "allowHosts": []string{"x.test:1"}})
		return o
	}
	for _, host := range []string{"*.test", "*"} {
		// Nor is the model told to ask for such an entry.
		if o := fetch(host); o.OK || !strings.Contains(o.err(), "the user was not asked") || strings.Contains(o.err(), "allowHosts needs") {
			t.Errorf("fetch of %s: %+v (%s)", host, o, o.err())
		}
	}
	if u.count() != 0 {
		t.Errorf("the user was asked about a wildcard: %q", u.last().Message)
	}
	if b, _ := os.ReadFile(f.policy); strings.Contains(string(b), "alwaysReach") {
		t.Errorf("the ceiling file got alwaysReach entries: %s", b)
	}
	// Positive control.
	u.set("once")
	if o := fetch("127.0.0.1"); !o.OK || string(o.Result) != `"other"` || u.count() != 1 || !strings.Contains(u.last().Message, "reach 127.0.0.1:"+port+"?") {
		t.Errorf("fetch of 127.0.0.1: %+v (%s), asked %d", o, o.err(), u.count())
	}
}

//go:build linux

package test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestNetworkOffNotes: a call without network whose command failed as tools
// fail without one gets a note saying the network is off by this call's
// choice and how to ask; execute_js's "fetch is not defined" says the same.
// Positive controls: a failure that is not the network's, and a success that
// prints the same words, get no note.
func TestNetworkOffNotes(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	const note = "[autobox: this call has no network (neither allowNetwork nor allowHosts)"
	for _, c := range []struct {
		script string
		note   bool
	}{
		{`echo "curl: (6) Could not resolve host: example.com" >&2; exit 6`, true},
		{`echo "OSError: [Errno 97] Address family not supported by protocol" >&2; exit 1`, true},
		{`echo "npm error code EAI_AGAIN" >&2; exit 1`, true},
		{`echo "make: *** [test] Error 1" >&2; exit 2`, false},
		{`echo "Could not resolve host (expected in this test)"; exit 0`, false},
	} {
		o, _ := s.exec(map[string]any{"command": bash(c.script)})
		if got := strings.Contains(o.Stderr, note); got != c.note {
			t.Errorf("%s: note %v, want %v: %q", c.script, got, c.note, o.Stderr)
		}
	}
	if _, err := exec.LookPath("curl"); err == nil {
		o, _ := s.exec(map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://192.0.2.1/"}})
		if o.code() == 0 || !strings.Contains(o.Stderr, note) || !strings.Contains(o.Stderr, "allowHosts") {
			t.Errorf("curl without network: %+v", o)
		}
		// The host's loopback: the note does not say "loopback works", but
		// whose 127.0.0.1 the command has, and how the host's is reached.
		o, _ = s.exec(map[string]any{"command": []string{"curl", "-sS", "--max-time", "5", "http://127.0.0.1:9/"}})
		if o.code() == 0 || !strings.Contains(o.Stderr, `The command's 127.0.0.1 is its own, not the host's: a server of the host is reached with allowHosts ["localhost:PORT"]`) || strings.Contains(o.Stderr, "loopback (127.0.0.1) works") {
			t.Errorf("curl to 127.0.0.1 without network: %+v", o)
		}
	}
	// execute_js: fetch exists only with network, and the error says how to get it.
	j, _ := s.js(map[string]any{"code": `await fetch("http://example.com/")`})
	if j.OK || !strings.Contains(j.err(), "fetch is not defined") || !strings.Contains(j.err(), "pass allowHosts") {
		t.Errorf("fetch without network: %q", j.err())
	}
	j, _ = s.js(map[string]any{"code": `undefinedThing()`})
	if strings.Contains(j.err(), "allowHosts") {
		t.Errorf("another ReferenceError got the network hint: %q", j.err())
	}
	j, _ = s.js(map[string]any{"code": `typeof fetch`, "allowHosts": []string{"example.com"}})
	if !j.OK || string(j.Result) != `"function"` {
		t.Errorf("fetch with allowHosts: %+v", j)
	}
}

func TestCLINetworkOffNote(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.want(h.run("", "exec", "--", "sh", "-c", `echo "Could not resolve host: x" >&2; exit 6`), 6, "", "pass --allow-host with the hosts it needs")
}

// TestNetworkDenialNotedOnSuccess: a denial is in stderr's note and in network
// even when the command exits 0 (curl of a denied plain-HTTP URL, which gets
// the proxy's 403 page); a lookup of the command's own (a client that ignores
// the proxy variables) says so.
func TestNetworkDenialNotedOnSuccess(t *testing.T) {
	f := newNetFixture(t)
	o := f.run(t, f.hosts(), `curl -sS -o /dev/null -w '%{http_code}' http://not-listed.test/`)
	if o.code() != 0 || o.Stdout != "403" || o.denied("not-listed.test", 80) == "" || !strings.Contains(o.Stderr, "[autobox: network denied:\n  not-listed.test:80 (not in allowHosts)") {
		t.Errorf("a denial with exit 0: %+v %+v", o, o.Network)
	}
	o = f.run(t, f.hosts(), fmt.Sprintf(`curl -sS -o /dev/null -w '%%{http_code}' http://web.test:%s/`, f.webPort))
	if o.code() != 0 || o.Stdout != "200" || strings.Contains(o.Stderr, "[autobox:") {
		t.Errorf("an allowed host: %+v", o)
	}
	if _, err := exec.LookPath("node"); err == nil {
		o = f.run(t, f.hosts(), fmt.Sprintf(`node -e 'fetch("http://web.test:%s/").then(r => r.text()).then(t => console.log(t), e => { console.error(String(e)); process.exit(3) })'`, f.webPort))
		if o.code() != 0 && !strings.Contains(o.Stderr, "looked names up itself instead of using the proxy variables") {
			t.Errorf("node's fetch that ignores the proxy: %+v", o)
		}
	}
}

// TestNetworkListedNameFails: a listed name that does not resolve, or that
// resolves where a name may not lead, is not answered "allowHosts needs" the
// name it lists already, but with what would help; an unlisted one still is
// (the control).
func TestNetworkListedNameFails(t *testing.T) {
	f := newNetFixture(t)
	j, _ := f.s.js(map[string]any{"code": `await fetch("http://missing.invalid/")`, "allowHosts": []string{"missing.invalid"}, "timeoutMs": 10000})
	if j.OK || !strings.Contains(j.err(), "It is in the call's allowHosts already: the name has no address") || strings.Contains(j.err(), "allowHosts needs") {
		t.Errorf("a listed name that does not resolve: %q", j.err())
	}
	j, _ = f.s.js(map[string]any{"code": `await fetch("http://other.invalid/")`, "allowHosts": []string{"missing.invalid"}, "timeoutMs": 10000})
	if j.OK || !strings.Contains(j.err(), `allowHosts needs "other.invalid"`) {
		t.Errorf("an unlisted name: %q", j.err())
	}
	if _, err := exec.LookPath("curl"); err == nil {
		o := f.run(t, []string{"internal.test"}, `curl -sS http://internal.test/`)
		if !strings.Contains(o.Stdout, "It is in the call's allowHosts, but a name may not lead there; an entry naming the address itself") || strings.Contains(o.Stdout, "allowHosts needs") {
			t.Errorf("a listed name that resolves to a private address: %+v", o)
		}
	}
}

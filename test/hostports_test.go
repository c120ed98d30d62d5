//go:build linux

package test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestHostLoopbackPorts: an allowHosts entry localhost:PORT puts the host's
// PORT at the command's own localhost:PORT (127.0.0.1 and ::1), for programs
// that ignore the proxy variables too (a raw socket, Python's socket), each
// connection checked and recorded by the proxy; an unlisted port of the host's
// loopback stays unreachable (the control), and a port autobox keeps for
// itself is refused naming why.
func TestHostLoopbackPorts(t *testing.T) {
	f := newNetFixture(t)
	hosts := []string{"localhost:" + f.rawPort, "web.test:" + f.webPort}
	// bash's /dev/tcp, proxy variables gone: the command's own loopback.
	o := f.run(t, hosts, unsetProxy+`exec 3<>/dev/tcp/127.0.0.1/`+f.rawPort+` && cat <&3; exec 4<>/dev/tcp/::1/`+f.rawPort+` && cat <&4`)
	if o.code() != 0 || o.Stdout != "raw\nraw\n" {
		t.Errorf("the host's port at the command's 127.0.0.1 and ::1: %+v", o)
	}
	allowed := 0
	if o.Network != nil {
		for _, a := range o.Network.Allowed {
			if a.Host == "localhost" && fmt.Sprint(a.Port) == f.rawPort {
				allowed = a.Count
			}
		}
	}
	if allowed != 2 {
		t.Errorf("the record: %+v, want localhost:%s allowed twice", o.Network, f.rawPort)
	}
	if _, err := exec.LookPath("python3"); err == nil {
		o = f.run(t, hosts, unsetProxy+`python3 -c 'import socket; s = socket.create_connection(("localhost", `+f.rawPort+`)); print(s.recv(10).decode(), end="")'`)
		if o.code() != 0 || o.Stdout != "raw\n" {
			t.Errorf("python's socket to localhost: %+v", o)
		}
	}
	// The control: the same connection without the entry (the call still
	// has hosts) is refused at the command's own loopback.
	o = f.run(t, []string{"web.test:" + f.webPort}, unsetProxy+`exec 3<>/dev/tcp/127.0.0.1/`+f.rawPort+` && cat <&3`)
	if o.code() == 0 || strings.Contains(o.Stdout, "raw") || !strings.Contains(o.Stderr, "Connection refused") {
		t.Errorf("an unlisted port of the host's loopback: %+v", o)
	}
	// A port is the host's or a session's, not both.
	var st sessOut
	f.s.call("exec_command", map[string]any{"command": []string{"sleep", "60"}, "yieldMs": 0}, &st)
	res := f.s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "allowHosts": []string{"session:" + st.SessionID + ":5000", "localhost:5000"}})
	if e := errorOf(res); !strings.Contains(e, "port 5000 of the command's localhost can be the host's or a session's, not both") {
		t.Errorf("a port both a session's and the host's: %q", e)
	}
	f.s.sess(map[string]any{"sessionId": st.SessionID, "action": "close"})
	// A port of autobox's own inside.
	res = f.s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "allowHosts": []string{"localhost:53"}})
	if e := errorOf(res); !strings.Contains(e, `allowHosts "localhost:53": port 53 of the command's localhost is autobox's own`) {
		t.Errorf("localhost:53: %q", e)
	}
}

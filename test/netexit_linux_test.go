//go:build linux

package test

import (
	"fmt"
	"strings"
	"testing"
)

// TestNetworkByHostConnectAndExit: a command that connects to an address it
// may not reach and exits at once still finds the refusal in its result. The
// transparent path's redirect completes the handshake before the proxy
// accepts the connection, so the call can end while the connection is still
// queued; the proxy then checks and records what is queued before it closes
// (proxy/drain_linux.go). It used to reset it unrecorded, now and then: many
// calls, each one connect and exit, and calls that connect to 60 ports in a
// row and exit (which lost most of them about one call in ten), each
// connection recorded. The positive control: an allowed host reached the
// same way, connect and exit, is recorded as reached and never as refused.
func TestNetworkByHostConnectAndExit(t *testing.T) {
	f := newNetFixture(t)
	requireTransparent(t)
	hosts := f.hosts()
	const outside = "93.184.215.14"
	for i := range 40 {
		port := 1000 + i
		o := f.run(t, hosts, fmt.Sprintf("/mnt/tools/probe tcp %s:%d", outside, port))
		// The probe may see its connection reset before it exits, or not.
		if got := o.denied(outside, port); got != "not in allowHosts" {
			t.Errorf("run %d: connect to %s:%d and exit: refusal %q, want %q (%+v, %+v)", i, outside, port, got, "not in allowHosts", o.execOut, o.Network)
		}
	}
	// Many connections in a row, each closed at once, then exit: the last
	// ones are likely still queued when the call ends. At most 60 a call
	// (a result lists 64 denials).
	for i := range 10 {
		first := 2000 + 60*i
		o := f.run(t, hosts, fmt.Sprintf("/mnt/tools/probe tcp-burst %s %d 60", outside, first))
		if o.Stdout != "ok 60 connects\n" {
			t.Errorf("burst %d: %+v", i, o.execOut)
		}
		missing := 0
		for port := first; port < first+60; port++ {
			if got := o.denied(outside, port); got != "not in allowHosts" {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("burst %d: %d of 60 connections to %s not recorded as refused (%+v)", i, missing, outside, o.Network)
		}
	}
	// Positive control: web.test (listed) by its synthetic address, the
	// redirect's other way.
	for i := range 10 {
		o := f.run(t, hosts, "/mnt/tools/probe tcp web.test:"+f.webPort)
		if o.Stdout != "ok connected\n" || o.Network == nil || len(o.Network.Denied) != 0 || !o.reached("web.test", atoi(f.webPort)) {
			t.Errorf("run %d: connect to the listed web.test:%s and exit: %+v, %+v", i, f.webPort, o.execOut, o.Network)
		}
	}
}

// reached reports whether the call's record counts host:port as reached.
func (o netOut) reached(host string, port int) bool {
	if o.Network == nil {
		return false
	}
	for _, a := range o.Network.Allowed {
		if strings.EqualFold(a.Host, host) && a.Port == port && a.Count > 0 {
			return true
		}
	}
	return false
}

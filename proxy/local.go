package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// Local routes: a call whose allowHosts names a session's port
// (session:ID:PORT, package portfwd) finds that port on its own loopback, and
// through the proxy too, for the tools that send localhost:PORT there (curl
// with HTTP_PROXY set and NO_PROXY empty): a request for localhost, 127.0.0.1
// or ::1 on a routed port goes to the session's port instead of the host's.

// LocalDial connects to a routed port.
type LocalDial func(ctx context.Context) (net.Conn, error)

type localRoute struct {
	name string // the entry, as the record names it: session:ID
	dial LocalDial
}

// RouteLocal sends the call's connections to loopback port to dial; name
// stands for it in the record. Call it before the command starts.
func (c *Call) RouteLocal(port uint16, name string, dial LocalDial) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.local == nil {
		c.local = map[uint16]localRoute{}
	}
	c.local[port] = localRoute{name: name, dial: dial}
}

// routedLocal returns the route for host:port, if host is loopback and the
// port routed.
func (c *Call) routedLocal(host string, port uint16) (localRoute, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.local[port]
	if !ok {
		return localRoute{}, false
	}
	if host == "localhost" {
		return r, true
	}
	a, err := netip.ParseAddr(host)
	return r, err == nil && a.Unmap().IsLoopback()
}

// dialLocal connects along r and records it.
func (c *Call) dialLocal(ctx context.Context, r localRoute, port uint16) (net.Conn, error) {
	conn, err := r.dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", r.name, port, err)
	}
	c.rec.allow(r.name, int(port))
	return conn, nil
}

package supervisor

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/portfwd"
	"github.com/autobox-dev/autobox/proxy"
)

// The host's loopback ports (issue 30): an allowHosts entry localhost:PORT
// (or 127.0.0.1:PORT, [::1]:PORT) reached only the programs that use the
// proxy variables; psql to the host's database, Node's fetch and raw sockets
// met their own empty loopback and ECONNREFUSED. Where the command has a
// network of its own, such an entry also puts the host's PORT at the
// command's own localhost:PORT (127.0.0.1 and ::1), as a session's port is
// put there (package portfwd relays). Each connection goes through the call's
// proxy as if the command had asked it for localhost:PORT: the server's list,
// the user's answers, the bound on connections and the record (network.allowed)
// all apply. The proxy path itself still works for the tools that take it.

// hostPorts takes the loopback entries of c's proxied hosts as routes, once
// c.net and c.routes (the session entries) are known. A port can be one
// entry's: a session's or the host's.
func (s *Server) hostPorts(c *execCall) error {
	if !c.net.proxied() || !s.privateNet(c) {
		return nil // the command shares the host's network, or has none (allowHosts is refused there)
	}
	taken := map[uint16]string{}
	for _, r := range c.routes {
		taken[r.port] = r.entry
	}
	for _, lp := range c.net.hosts.LoopbackPorts() {
		if prev, dup := taken[lp.Port]; dup {
			if _, isSession := sessionPort(c.routes, lp.Port); isSession {
				return fmt.Errorf("%w: allowHosts %q and %q: port %d of the command's localhost can be the host's or a session's, not both", policy.ErrInvalid, prev, lp.Entry, lp.Port)
			}
			continue // localhost:P and 127.0.0.1:P: one port, the host's
		}
		if why := reservedHostPort(int(lp.Port)); why != "" {
			return fmt.Errorf("%w: allowHosts %q: %s", policy.ErrInvalid, lp.Entry, why)
		}
		taken[lp.Port] = lp.Entry
		c.hostRoutes = append(c.hostRoutes, lp)
	}
	return nil
}

// sessionPort returns the session route of port, if any.
func sessionPort(routes []sessionRoute, port uint16) (sessionRoute, bool) {
	for _, r := range routes {
		if r.port == port {
			return r, true
		}
	}
	return sessionRoute{}, false
}

// reservedHostPort says why a host's port cannot be put at the command's own
// localhost.
func reservedHostPort(p int) string {
	switch p {
	case jail.ProxyPort, jail.ProxyPort + 1, 53: // the proxy's, jail.RedirectPort (3129), the resolver's
		return fmt.Sprintf("port %d of the command's localhost is autobox's own (its proxy and resolver), so the host's port %d cannot be put there; a server of the host on another port can", p, p)
	}
	return ""
}

// routeHostPorts routes each of c's host loopback entries on ep: a
// connection to the command's localhost:PORT is dialled through pc.
func routeHostPorts(c *execCall, ep *portfwd.Endpoint, cmd *policy.Command, pc *proxy.Call) {
	for _, lp := range c.hostRoutes {
		addr := net.JoinHostPort(lp.Host, strconv.Itoa(int(lp.Port)))
		cmd.ListenPorts = append(cmd.ListenPorts, int(lp.Port))
		ep.Route(lp.Port, portfwd.Route{Name: lp.Entry, Dial: func(ctx context.Context) (net.Conn, error) {
			return pc.DialContext(ctx, "tcp", addr)
		}})
	}
}

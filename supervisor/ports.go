package supervisor

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/portfwd"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/session"
)

// Session ports: a dev server that a session runs is reachable, on request,
// from later calls and from the user's browser, and nothing else of the
// session's network is (package portfwd relays; the launchers, which alone
// may enter the commands' network namespaces, connect and listen there).
//
//   - allowHosts "session:ID:PORT" in a later exec_command: the command finds
//     the session's PORT at its own localhost:PORT (127.0.0.1 and ::1), and
//     the proxy sends localhost:PORT there too when the call also has hosts.
//     The call's network is otherwise what its other entries make it.
//   - expose: [PORT] on the exec_command that starts a session: the host's
//     127.0.0.1 gets a port (the kernel picks it) relayed to the session's
//     PORT, reported in the session's answers as ports[{port, url}], closed
//     when the session ends.
//
// Both need the session's command in a network namespace of its own (a root
// server, or an ordinary user's with user namespaces). A session with
// allowNetwork shares the host's network: its server is on the host already,
// and expose reports its own port. In landlock-only mode a session without
// network cannot listen at all, and session entries are refused.

// SessionEntryPrefix starts an allowHosts entry that names a session's port.
const SessionEntryPrefix = "session:"

// Bounds.
const (
	maxExpose       = 16
	maxSessionPorts = 16
)

// PortReport is a session port exposed to the host.
type PortReport struct {
	Port int    `json:"port" jsonschema:"the port the session's command listens on (inside its sandbox)"`
	URL  string `json:"url" jsonschema:"where the user's browser (or any client on this machine) reaches it: the host's loopback"`
	Note string `json:"note,omitempty" jsonschema:"how the port is reached, when not relayed (a session that shares the host's network)"`
}

// sessionRoute is a validated session:ID:PORT entry.
type sessionRoute struct {
	entry  string
	port   uint16
	id     string
	target *portfwd.Endpoint
}

// takeSessionEntries takes the session:ID:PORT entries out of allowHosts: it
// returns the other entries (an empty, not nil, list when all were session
// entries: the call's list then allows no host) and checks the syntax.
func (c *execCall) takeSessionEntries(in *ExecInput) ([]string, error) {
	var hosts []string
	found := false
	seen := map[uint16]string{}
	for i, e := range in.AllowHosts {
		rest, ok := strings.CutPrefix(e, SessionEntryPrefix)
		if !ok {
			hosts = append(hosts, e)
			continue
		}
		found = true
		bad := func(why string) error {
			return fmt.Errorf("%w: allowHosts[%d] %q: %s", policy.ErrInvalid, i, e, why)
		}
		id, portStr, ok := strings.Cut(rest, ":")
		if !ok || id == "" {
			return nil, bad("a session's port is session:SESSION_ID:PORT, e.g. session:s-0123abcd:3000 (the sessionId exec_command answered with)")
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil || port == 0 {
			return nil, bad(fmt.Sprintf("port %q is not a number from 1 to 65535", portStr))
		}
		if why := reservedPort(int(port)); why != "" {
			return nil, bad(why)
		}
		if prev, dup := seen[uint16(port)]; dup {
			return nil, bad(fmt.Sprintf("port %d is already %q's: each port of the command's localhost can be one session's", port, prev))
		}
		seen[uint16(port)] = e
		if len(c.routes) == maxSessionPorts {
			return nil, bad(fmt.Sprintf("at most %d session ports per call", maxSessionPorts))
		}
		c.routes = append(c.routes, sessionRoute{entry: e, port: uint16(port), id: id})
	}
	if !found {
		return in.AllowHosts, nil
	}
	if in.AllowNetwork {
		return nil, fmt.Errorf("%w: allowHosts %q with allowNetwork: a session's port is put on the command's own localhost, which a command with the whole network does not have (it shares the host's); drop allowNetwork, or expose the port on the session (expose: [%d]) and use the url its answer reports", policy.ErrInvalid, c.routes[0].entry, c.routes[0].port)
	}
	if hosts == nil {
		hosts = []string{}
	}
	return hosts, nil
}

// NamesSessionPort reports whether an allowHosts list names a session's port
// (the command line runs such a call in its session server, beside the session).
func NamesSessionPort(allowHosts []string) bool {
	for _, e := range allowHosts {
		if strings.HasPrefix(e, SessionEntryPrefix) {
			return true
		}
	}
	return false
}

// reservedPort says why a port cannot be a session's on a command's localhost.
func reservedPort(p int) string {
	switch p {
	case jail.ProxyPort:
		return fmt.Sprintf("port %d is autobox's proxy's inside the sandbox; have the session's server listen on another port", p)
	case jail.ProxyPort + 1, 53: // jail.RedirectPort, and the resolver's
		return fmt.Sprintf("port %d is autobox's own inside the sandbox; have the session's server listen on another port", p)
	}
	return ""
}

// privateNet reports whether c's command gets a network namespace of its own.
func (s *Server) privateNet(c *execCall) bool {
	return runtime.GOOS == "linux" && !s.opts.Unsafe && !c.net.open && jail.Isolations().PrivateNetwork
}

// resolvePorts checks c's session entries against the running sessions, and
// its expose list, once c.net is known.
func (s *Server) resolvePorts(c *execCall, in *ExecInput) error {
	for i := range c.routes {
		r := &c.routes[i]
		if !s.privateNet(c) {
			return fmt.Errorf("%w: allowHosts %q: a session's port is put on the command's own localhost, in a network namespace of its own, which this server cannot make (%s); a session started with allowNetwork listens on the host's network, where a call with allowNetwork reaches it at localhost:%d (ask the user first: that opens the whole network)", ErrSandboxUnavailable, r.entry, jail.NoNamespacesWhy(), r.port)
		}
		sp := s.sports.lookup(r.id)
		switch {
		case sp == nil:
			return fmt.Errorf("%w: allowHosts %q: no running session %s on this server (exec_session list shows them; a session is this server's while its command runs)", policy.ErrInvalid, r.entry, r.id)
		case sp.ep == nil:
			return fmt.Errorf("%w: allowHosts %q: session %s shares the host's network (it was started with allowNetwork), so its ports are the host's own: reach its server with allowHosts localhost:%d (through the proxy) instead", policy.ErrInvalid, r.entry, r.id, r.port)
		}
		r.target = sp.ep
	}
	if len(in.Expose) == 0 {
		return nil
	}
	if c.yield == nil {
		return fmt.Errorf("%w: expose is for a session's server: give yieldMs too (e.g. 2000), and the answer reports where each port is reached", policy.ErrInvalid)
	}
	if len(in.Expose) > maxExpose {
		return fmt.Errorf("%w: expose: %d ports, at most %d", policy.ErrInvalid, len(in.Expose), maxExpose)
	}
	seen := map[int]bool{}
	for i, p := range in.Expose {
		if p < 1 || p > 65535 {
			return fmt.Errorf("%w: expose[%d] %d: not a port from 1 to 65535", policy.ErrInvalid, i, p)
		}
		if seen[p] {
			return fmt.Errorf("%w: expose[%d] %d: given twice", policy.ErrInvalid, i, p)
		}
		seen[p] = true
	}
	c.expose = in.Expose
	if !s.privateNet(c) && !c.net.open && !s.opts.Unsafe {
		return fmt.Errorf("%w: expose needs the session's command in a network namespace of its own, which this server cannot make (%s), and without one a command without network cannot listen at all; with allowNetwork: true it listens on the host's network itself and the answer reports its port (ask the user first: that opens the whole network)", ErrSandboxUnavailable, jail.NoNamespacesWhy())
	}
	return nil
}

// sessionPorts is the server's part: the relay (started on first use) and
// the running sessions' ports by session id.
type sessionPorts struct {
	once sync.Once
	srv  *portfwd.Server
	err  error

	mu   sync.Mutex
	byID map[string]*callPorts
}

func (sp *sessionPorts) server() (*portfwd.Server, error) {
	sp.once.Do(func() { sp.srv, sp.err = portfwd.New(os.TempDir()) })
	return sp.srv, sp.err
}

func (sp *sessionPorts) lookup(id string) *callPorts {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.byID[id]
}

func (sp *sessionPorts) close() {
	sp.once.Do(func() { sp.err = fmt.Errorf("the server is closing") })
	if sp.srv != nil {
		sp.srv.Close()
	}
}

// callPorts is one call's use of session ports.
type callPorts struct {
	sp      *sessionPorts
	ep      *portfwd.Endpoint // nil: none (or a session on the host's network)
	reports []PortReport
	id      string // a session's, once it has one
	closed  bool   // under sp.mu
}

// portsFor sets up cmd's session ports: the routes of c's session entries
// (also through the proxy call pc, if any), and for a session its offer and
// its exposed ports. The caller closes the result.
func (s *Server) portsFor(c *execCall, cmd *policy.Command, pc *proxy.Call, session bool) (*callPorts, error) {
	cp := &callPorts{sp: &s.sports}
	private := s.privateNet(c)
	if len(c.routes) == 0 && (len(c.hostRoutes) == 0 || pc == nil) && !(session && private) {
		for _, p := range c.expose { // a session on the host's network
			cp.reports = append(cp.reports, PortReport{Port: p, URL: "http://127.0.0.1:" + strconv.Itoa(p),
				Note: "the session shares the host's network (allowNetwork): this is its own port on the host, not a relay"})
		}
		return cp, nil
	}
	srv, err := s.sports.server()
	if err != nil {
		return nil, fmt.Errorf("starting the session ports' relay: %w", err)
	}
	if cp.ep, err = srv.Register(); err != nil {
		return nil, err
	}
	cmd.PortsSocket, cmd.PortsToken, cmd.OfferPorts = srv.Socket(), cp.ep.Token(), session && private
	for _, r := range c.routes {
		cmd.ListenPorts = append(cmd.ListenPorts, int(r.port))
		cp.ep.Route(r.port, portfwd.Route{Target: r.target, Port: r.port, Name: r.entry})
		if pc != nil {
			pc.RouteLocal(r.port, SessionEntryPrefix+r.id, func(ctx context.Context) (net.Conn, error) { return r.target.Dial(ctx, r.port) })
		}
	}
	if pc != nil {
		routeHostPorts(c, cp.ep, cmd, pc) // hostports.go
	}
	for _, p := range c.expose {
		hp, err := cp.ep.Expose(uint16(p))
		if err != nil {
			cp.close()
			return nil, err
		}
		cp.reports = append(cp.reports, PortReport{Port: p, URL: "http://127.0.0.1:" + strconv.Itoa(hp)})
	}
	return cp, nil
}

// named makes a session's ports known by its id, until close; a connection
// to them counts as a use of the session (it does not idle out meanwhile).
func (cp *callPorts) named(id string, sessions *session.Table[sessionEnd]) {
	if cp.ep != nil {
		cp.ep.SetHold(func() func() { return sessions.Hold(id) })
	}
	cp.sp.mu.Lock()
	defer cp.sp.mu.Unlock()
	if cp.sp.byID == nil {
		cp.sp.byID = map[string]*callPorts{}
	}
	cp.id = id
	if !cp.closed { // a session that ended at once is not to be found
		cp.sp.byID[id] = cp
	}
}

// close ends the call's relays and exposed ports. Safe on nil and twice.
func (cp *callPorts) close() {
	if cp == nil {
		return
	}
	cp.sp.mu.Lock()
	cp.closed = true
	if cp.id != "" && cp.sp.byID[cp.id] == cp {
		delete(cp.sp.byID, cp.id)
	}
	cp.sp.mu.Unlock()
	if cp.ep != nil {
		cp.ep.Close()
	}
}

// note appends to a finished call's stderr what went wrong with its session
// ports (a session that ended, a port nothing listened on).
func (cp *callPorts) note(out *ExecOutput) {
	if cp == nil || cp.ep == nil || out == nil {
		return
	}
	for _, n := range cp.ep.Notes() {
		out.Stderr += "[autobox: " + n + "]\n"
	}
}

// portReports are a running session's exposed ports, for its answers.
func (s *Server) portReports(id string) []PortReport {
	if cp := s.sports.lookup(id); cp != nil {
		return cp.reports
	}
	return nil
}

package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// dialTimeout bounds one connection attempt (the call's deadline may be sooner).
const dialTimeout = 10 * time.Second

// Denial is a connection the proxy refused, and why.
type Denial struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
	// Listed: the call's list (or the user) allows host:port; the name
	// itself failed (it does not resolve, or leads to a forbidden address).
	Listed bool `json:"-"`
}

func (d *Denial) Error() string { return d.Target() + ": " + d.Reason }

// Target is the host:port that was refused, or the host alone for port 0:
// a connection refused before its host was known (see acquire, Host "*"),
// or a name the transparent path's resolver refused (for every port).
func (d *Denial) Target() string {
	if d.Port == 0 {
		return d.Host
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Advice is what to tell the command (and the model reading its output) about
// a denial: what was refused, why, and the entry that would allow it. A host
// the command named that no entry names alone (allowHosts syntax for a range
// or a wildcard, "*.com", a name with a zone) gets no entry: the model would
// pass the advice on, and the user would grant what it reads as.
func (d *Denial) Advice() string {
	if d.Port == 0 {
		return "autobox: connection refused: " + d.Reason + "."
	}
	if policy.AskableHost(policy.NormalizeHost(d.Host)) != nil {
		return fmt.Sprintf("autobox: connection to %s denied: %s. No allowHosts entry allows this host alone: it is not a plain host name or address (do not work around it).",
			d.Target(), d.Reason)
	}
	entry := d.Host
	if strings.Contains(entry, ":") {
		entry = "[" + entry + "]"
	}
	if d.Port != 80 && d.Port != 443 {
		entry += ":" + strconv.Itoa(d.Port)
	}
	if d.Listed {
		// Another entry for it would change nothing: say what would.
		if strings.HasPrefix(d.Reason, "does not resolve") {
			return fmt.Sprintf("autobox: connection to %s failed: %s. It is in the call's allowHosts already: the name has no address in this machine's DNS (check its spelling, and that it exists).", d.Target(), d.Reason)
		}
		return fmt.Sprintf("autobox: connection to %s denied: %s. It is in the call's allowHosts, but a name may not lead there; an entry naming the address itself (with its port) allows it (ask the user; do not work around it).", d.Target(), d.Reason)
	}
	return fmt.Sprintf("autobox: connection to %s denied: %s. To allow it, the call's allowHosts needs %q (ask the user; do not work around it).",
		d.Target(), d.Reason, entry)
}

// DialContext connects to addr ("host:port") if the call's list allows it and
// the call may open another connection (see acquire), records the outcome,
// and returns the connection or the *Denial (or the dial error). The
// connection counts until it is closed, and is closed with the call. network
// must be tcp, tcp4 or tcp6. It is execute_js's fetch dialer.
func (c *Call) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d := c.acquire(); d != nil {
		return nil, d
	}
	conn, err := c.dialAddr(ctx, network, addr)
	if err != nil {
		c.release()
		return nil, err
	}
	cc := &countedConn{Conn: conn, c: c}
	if !c.track(cc) {
		cc.Close()
		return nil, errors.New("the call has ended")
	}
	return cc, nil
}

// dialAddr is DialContext without the count: the proxy's own upstream
// connections are counted by the client connection they serve.
func (c *Call) dialAddr(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("port %q: not a port", portStr)
	}
	return c.dial(ctx, host, uint16(port))
}

// dial checks host:port, resolves it once and connects to a checked address.
// The checks come first, unbounded by dialTimeout: they may wait for the
// user's answer (ask.go), bounded by the call and by ctx.
func (c *Call) dial(ctx context.Context, host string, port uint16) (net.Conn, error) {
	host = policy.NormalizeHost(host)
	if r, ok := c.routedLocal(host, port); ok { // local.go: a session's port
		ctx, cancel := c.bound(ctx)
		defer cancel()
		return c.dialLocal(ctx, r, port)
	}
	addrs, d := c.check(ctx, host, port)
	ctx, cancel := c.bound(ctx)
	defer cancel()
	return c.dialChecked(ctx, host, port, addrs, d)
}

// bound limits ctx to one connection attempt and to the call.
func (c *Call) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// dialChecked records the denial d, or connects to the first of addrs that
// answers (checked for host:port) and records that.
func (c *Call) dialChecked(ctx context.Context, host string, port uint16, addrs []netip.Addr, d *Denial) (net.Conn, error) {
	if d != nil {
		c.rec.deny(*d)
		return nil, d
	}
	last := c.ctx.Err() // without addrs: the call ended (check)
	var dialer net.Dialer
	for _, a := range addrs {
		conn, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil {
			c.rec.allow(host, int(port))
			return conn, nil
		}
		last = err
	}
	return nil, fmt.Errorf("connecting to %s: %w", net.JoinHostPort(host, strconv.Itoa(int(port))), last)
}

// check returns the addresses host:port may be dialled at, in order, or the
// denial. What the list does not allow, the user may allow (ask.go).
func (c *Call) check(ctx context.Context, host string, port uint16) ([]netip.Addr, *Denial) {
	if !c.allow.AllowsTarget(host, port) {
		if d := c.askOrDeny(ctx, host, port); d != nil {
			return nil, d
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		// An address literal, named by an entry or by the user: whatever it
		// is (the user named it).
		return []netip.Addr{addr.Unmap()}, nil
	}
	if host == "localhost" {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	addrs, err := c.p.resolver.lookup(ctx, host)
	if err != nil && c.ctx.Err() != nil {
		// The call ended during the lookup (its Close waits for this): not
		// a denial of the name; no addresses, so dialChecked says why.
		return nil, nil
	}
	if err != nil {
		return nil, &Denial{Host: host, Port: int(port), Reason: "does not resolve: " + err.Error(), Listed: true}
	}
	ok, d := c.usable(host, port, addrs)
	if d != nil {
		d.Listed = true
	}
	return ok, d
}

// notListed is the denial of host:port that no entry allows.
func (c *Call) notListed(host string, port uint16) *Denial {
	if c.allow.AllowsHostOnSomePort(host) {
		return &Denial{Host: host, Port: int(port), Reason: fmt.Sprintf("port %d not allowed", port)}
	}
	return &Denial{Host: host, Port: int(port), Reason: "not in allowHosts"}
}

// usable returns those of addrs, what the allowed name host resolved to, that
// the address rules let a connection on port reach, or the denial if none.
func (c *Call) usable(host string, port uint16, addrs []netip.Addr) ([]netip.Addr, *Denial) {
	var ok []netip.Addr
	why := ""
	for _, a := range addrs {
		a = a.Unmap()
		if reason := policy.ForbiddenAddr(a, c.p.resolver.own); reason != "" && !c.allow.NamesAddr(a, port) {
			why = reason
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, &Denial{Host: host, Port: int(port), Reason: "resolves to " + why}
	}
	return ok, nil
}

// resolver looks names up once per connection, with the server's own DNS
// (Go's resolver), and knows this machine's interface addresses.
type resolver struct {
	r     *net.Resolver
	fixed map[string][][]netip.Addr // ResolveEnv: the answers in turn, the last one then kept
	// lookupHook, if set, answers instead (tests).
	lookupHook func(host string) ([]netip.Addr, error)

	mu       sync.Mutex
	ownAddrs map[netip.Addr]bool
	ownAt    time.Time
}

// ResolveEnv, in the server's environment, fixes what names resolve to for the
// proxy: "name=addr[,addr...][;name=...]". An answer may be followed by
// others, ">addr[,addr...]": the next lookup gets the next one (a name that
// changes its answer, as in DNS rebinding). For tests (which cannot change
// the machine's DNS) and for debugging; the address rules still apply.
const ResolveEnv = "AUTOBOX_PROXY_RESOLVE"

func newResolver() *resolver {
	r := &resolver{r: net.DefaultResolver, fixed: map[string][][]netip.Addr{}}
	for _, entry := range strings.Split(os.Getenv(ResolveEnv), ";") {
		name, answers, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		name = policy.NormalizeHost(strings.TrimSpace(name))
		for _, answer := range strings.Split(answers, ">") {
			var addrs []netip.Addr
			for _, s := range strings.Split(answer, ",") {
				if a, err := netip.ParseAddr(strings.TrimSpace(s)); err == nil {
					addrs = append(addrs, a)
				}
			}
			if len(addrs) > 0 {
				r.fixed[name] = append(r.fixed[name], addrs)
			}
		}
	}
	return r
}

func (r *resolver) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if r.lookupHook != nil {
		return r.lookupHook(host)
	}
	r.mu.Lock()
	if answers, ok := r.fixed[host]; ok {
		if len(answers) > 1 {
			r.fixed[host] = answers[1:]
		}
		r.mu.Unlock()
		return answers[0], nil
	}
	r.mu.Unlock()
	addrs, err := r.r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return nil, fmt.Errorf("no such host")
		}
		return nil, err
	}
	return addrs, nil
}

// own reports whether a is an address of this machine's interfaces (read
// again at most every few seconds).
func (r *resolver) own(a netip.Addr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ownAddrs == nil || time.Since(r.ownAt) > 5*time.Second {
		r.ownAddrs = map[netip.Addr]bool{}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, ia := range addrs {
				if p, err := netip.ParsePrefix(ia.String()); err == nil {
					r.ownAddrs[p.Addr().Unmap()] = true
				}
			}
		}
		r.ownAt = time.Now()
	}
	return r.ownAddrs[a.Unmap()]
}

package proxy

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
)

// The transparent path: for programs that ignore the proxy variables. On
// Linux where nf_tables works in the command's network namespace, the
// launcher redirects every TCP connection that would leave the namespace to a
// listener there, and every DNS query to its resolver port, and hands both
// sockets to the proxy (policy.ProxyTransparent). The proxy then:
//
//   - answers the command's lookups (dns.go): a name the call's list allows
//     is resolved here, once, checked against the address rules, pinned, and
//     answered with a synthetic address of fakeRange that stands for it in
//     this call; any other name is refused and recorded;
//   - serves each redirected connection: it reads the destination the
//     command asked for (SO_ORIGINAL_DST), maps a synthetic address back to
//     its name and connects, with the call's checks and records, to the
//     address pinned at the lookup; any other address is checked as a literal
//     (only an entry naming it allows it).
//
// Why synthetic addresses rather than the real ones: the destination alone
// then names the host (many names share an address, and one name's addresses
// change), the command never learns or chooses the address that is dialled,
// and a name that answers one address at the lookup and another later (DNS
// rebinding) cannot move a connection: it goes to what was checked at the
// lookup. 198.18.0.0/15 (RFC 2544, benchmarking) is never a real destination
// of an allowed name: the address rules refuse it.

// fakeRange is where synthetic addresses come from, per call.
var fakeRange = netip.MustParsePrefix("198.18.0.0/15")

// maxFakeNames bounds the names a call may look up (wildcard entries allow
// any number of names).
const maxFakeNames = 4096

// fakeNames maps the names a call looked up to their synthetic addresses and
// the real addresses pinned for them.
type fakeNames struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]*pinned
}

type pinned struct {
	name  string
	addrs []netip.Addr
}

// pin records addrs for name and returns its synthetic address; false when
// the call has used up its names.
func (f *fakeNames) pin(name string, addrs []netip.Addr) (netip.Addr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byName == nil {
		f.byName, f.byAddr = map[string]netip.Addr{}, map[netip.Addr]*pinned{}
	}
	a, ok := f.byName[name]
	if !ok {
		if len(f.byName) >= maxFakeNames {
			return netip.Addr{}, false
		}
		base := fakeRange.Addr().As4()
		n := binary.BigEndian.Uint32(base[:]) + uint32(len(f.byName)) + 1
		binary.BigEndian.PutUint32(base[:], n)
		a = netip.AddrFrom4(base)
		f.byName[name] = a
	}
	f.byAddr[a] = &pinned{name: name, addrs: addrs}
	return a, true
}

// lookup returns the name and the pinned addresses a synthetic address
// stands for.
func (f *fakeNames) lookup(a netip.Addr) (pinned, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.byAddr[a]
	if !ok {
		return pinned{}, false
	}
	return *p, true
}

// dialPinned connects to name:port at the addresses pinned at its lookup,
// with the checks of any connection to the name.
//
// A name the list does not allow on port, or one given a synthetic address
// without a lookup (dns.go: the user may yet allow it), takes the way of any
// connection to a name: the list, the user, a lookup now.
func (c *Call) dialPinned(p pinned, port uint16) (net.Conn, error) {
	if p.addrs == nil || !c.allow.AllowsName(p.name, port) {
		return c.dial(c.ctx, p.name, port)
	}
	ctx, cancel := c.bound(c.ctx)
	defer cancel()
	addrs, d := c.usable(p.name, port, p.addrs)
	if d != nil {
		d.Listed = true
	}
	return c.dialChecked(ctx, p.name, port, addrs, d)
}

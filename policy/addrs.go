package policy

import (
	"net/netip"
)

// Addresses a host allowlist never reaches unless an entry names them
// (AllowHosts.NamesAddr): where a name that resolves to them, or an address
// given as a literal, would lead to this machine, its networks or a cloud
// provider's instance services instead of the Internet host the user allowed.
// Checked on the address the proxy is about to dial, after its one lookup.
var (
	metadataAddrs = []netip.Prefix{
		netip.MustParsePrefix("169.254.169.254/32"), // AWS, GCP, Azure, OpenStack, ...
		netip.MustParsePrefix("169.254.170.2/32"),   // AWS ECS task metadata
		netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
		netip.MustParsePrefix("168.63.129.16/32"),   // Azure wire server (a public address)
		netip.MustParsePrefix("fd00:ec2::/32"),      // AWS over IPv6
	}
	forbiddenRanges = []struct {
		prefix netip.Prefix
		what   string
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (this-network) address"},
		{netip.MustParsePrefix("10.0.0.0/8"), "a private address"},
		{netip.MustParsePrefix("100.64.0.0/10"), "a carrier-grade NAT address"},
		{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
		{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
		{netip.MustParsePrefix("172.16.0.0/12"), "a private address"},
		{netip.MustParsePrefix("192.0.0.0/24"), "a reserved (IETF protocol) address"},
		{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
		{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay address"},
		{netip.MustParsePrefix("192.168.0.0/16"), "a private address"},
		{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
		{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
		{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
		{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
		{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address"},
		{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
		{netip.MustParsePrefix("::/128"), "the unspecified address"},
		{netip.MustParsePrefix("::1/128"), "a loopback address"},
		{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
		{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
		{netip.MustParsePrefix("100::/64"), "a discard address"},
		{netip.MustParsePrefix("2001::/32"), "a Teredo tunnel address"},
		{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
		{netip.MustParsePrefix("fc00::/7"), "a private (unique local) address"},
		{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
		{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
		{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
	}
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// ForbiddenAddr says why a connection to addr is refused unless an entry names
// it ("a private address 10.0.0.5"), or "" if it is an ordinary Internet
// address. own reports this machine's own interface addresses (may be nil).
// IPv4 addresses embedded in IPv6 (IPv4-mapped, NAT64, 6to4) are judged as
// the IPv4 address they lead to.
func ForbiddenAddr(addr netip.Addr, own func(netip.Addr) bool) string {
	addr = addr.WithZone("")
	if v4, how := embeddedIPv4(addr); how != "" {
		if why := ForbiddenAddr(v4, own); why != "" {
			return why + " (" + how + " " + addr.String() + ")"
		}
		return ""
	}
	for _, m := range metadataAddrs {
		if m.Contains(addr) {
			return "a cloud metadata address " + addr.String()
		}
	}
	for _, r := range forbiddenRanges {
		if r.prefix.Contains(addr) {
			return r.what + " " + addr.String()
		}
	}
	if own != nil && own(addr) {
		return "this machine's own address " + addr.String()
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address an IPv6 address leads to, and how
// ("IPv4-mapped", "NAT64", "6to4"), or "" if it embeds none.
func embeddedIPv4(a netip.Addr) (netip.Addr, string) {
	if !a.Is6() {
		return netip.Addr{}, ""
	}
	b := a.As16()
	switch {
	case a.Is4In6():
		return a.Unmap(), "IPv4-mapped"
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64"
	case sixTo4.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4"
	}
	return netip.Addr{}, ""
}

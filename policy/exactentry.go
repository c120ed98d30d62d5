package policy

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// What a question to the user may be about. A command that wants a host its
// list does not allow may have the user asked (package proxy, ask.go), and
// the answer is kept as an allowHosts entry (a session grant, or the ceiling
// file's alwaysReach). The host comes from the command: a name it looked up
// or asked a proxy for, or an address it connected to. A DNS name may be any
// bytes, allowHosts syntax among them ("127.0.0.0/8", "*.com"), and written
// back as an entry such a name would be a range or a wildcard: the user asked
// "reach 127.0.0.0/8:8001?" would grant the host's whole loopback. So only a
// plain host name or one address is asked about, and the entry kept names
// that host and that port alone.

// ExactEntry is the allowHosts entry that allows host:port and nothing else:
// host a plain host name (letters, digits, hyphens and underscores in dotted
// labels, no wildcard, lower case) or one address (no range, no zone), written
// as an address with an IPv4-mapped address unmapped. An error says why host
// is neither.
func ExactEntry(host string, port uint16) (string, error) {
	if port == 0 {
		return "", fmt.Errorf("port 0")
	}
	if err := AskableHost(host); err != nil {
		return "", err
	}
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	entry := net.JoinHostPort(host, strconv.Itoa(int(port)))
	// What the entry is read back as must be that one host and port.
	r, err := parseHostRule(entry)
	one := err == nil && len(r.ports) == 1 && r.ports[0] == port && !r.wildcard &&
		(r.name != "" && r.name == host || r.prefix.IsValid() && r.prefix.IsSingleIP())
	if !one {
		return "", fmt.Errorf("%q would be read back as more than one host and port", entry)
	}
	return entry, nil
}

// AskableHost reports, as an error, why host is neither a plain host name nor
// one address (see ExactEntry); nil if it is one of them.
func AskableHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return fmt.Errorf("%q is an address with a zone", host)
		}
		return nil
	}
	if host != NormalizeHost(host) || checkHostName(host) != nil {
		return fmt.Errorf("%q is not a plain host name or address", host)
	}
	return nil
}

// OneHost reports whether entry allows one host name or one address (on any
// of its ports): not a range, not a wildcard. Entries that questions write
// always do; `autobox policy` points out those of alwaysReach that do not.
func OneHost(entry string) bool {
	r, err := parseHostRule(entry)
	return err == nil && !r.wildcard && (r.name != "" || r.prefix.IsSingleIP())
}

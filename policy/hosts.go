package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// MaxAllowHosts bounds a call's allowHosts list.
const MaxAllowHosts = 256

// defaultPorts are the ports an entry without one allows: HTTP and HTTPS.
var defaultPorts = []uint16{80, 443}

// AllowHosts is a validated host allowlist (a call's allowHosts, or the server's
// --allow-host default): the hosts and addresses a call may connect to through
// autobox's proxy, and nothing else. The zero value allows nothing.
//
// Entries:
//
//	example.com            that host, ports 80 and 443
//	*.example.com          its subdomains, not example.com itself
//	example.com:8443       that port only
//	localhost:5432         loopback (127.0.0.1, ::1) on that port
//	10.1.2.3, 2001:db8::1  that address (IPv6 with a port: [2001:db8::1]:443)
//	10.1.2.0/24:5432       that range ([2001:db8::/32]:443)
//
// A name matches before any DNS; the address it resolves to must then pass the
// address rules (ForbiddenAddr) unless an entry names that address or a range
// holding it, for that port.
type AllowHosts struct {
	rules []hostRule
}

type hostRule struct {
	entry    string       // as given, for messages
	name     string       // lower-case host name, "" for an address rule
	wildcard bool         // name is a suffix: *.name
	prefix   netip.Prefix // address rules (a single address is a /32 or /128)
	ports    []uint16
}

// ParseAllowHosts validates entries as a whole; an error names the entry (by
// index and text) and what is wrong with it. what is the parameter's name in the
// caller's words ("allowHosts", "--allow-host").
func ParseAllowHosts(what string, entries []string) (AllowHosts, error) {
	if len(entries) > MaxAllowHosts {
		return AllowHosts{}, invalid("%s: %d entries, at most %d allowed", what, len(entries), MaxAllowHosts)
	}
	var a AllowHosts
	for i, e := range entries {
		r, err := parseHostRule(e)
		if err != nil {
			return AllowHosts{}, invalid("%s[%d] %q: %s", what, i, e, err)
		}
		a.rules = append(a.rules, r)
	}
	return a, nil
}

func parseHostRule(e string) (hostRule, error) {
	r := hostRule{entry: e}
	switch {
	case e == "":
		return r, fmt.Errorf("empty entry")
	case strings.HasPrefix(e, "session:"):
		return r, fmt.Errorf("a session's port (session:ID:PORT) is for exec_command's allowHosts, which puts it on the command's own localhost; it is no host here")
	case strings.Contains(e, "://"):
		return r, fmt.Errorf("a URL: give the host, and :PORT if not 80 and 443")
	case strings.ContainsAny(e, " \t\r\n\\@?#"):
		return r, fmt.Errorf("not a host name, address or range")
	}
	host, port, err := splitHostPort(e)
	if err != nil {
		return r, err
	}
	if port != "" {
		if port == "*" {
			return r, fmt.Errorf("any port: name the port (or allow the whole network with allowNetwork)")
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return r, fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
		r.ports = []uint16{uint16(n)}
	} else {
		r.ports = defaultPorts
	}
	switch {
	case host == "*" || strings.HasPrefix(host, "*:"):
		return r, fmt.Errorf("a wildcard for every host: use allowNetwork for open network")
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return r, fmt.Errorf("not an address range: %v", err)
		}
		r.prefix = p.Masked()
	case isAddr(host):
		addr, _ := netip.ParseAddr(host)
		if addr.Zone() != "" {
			return r, fmt.Errorf("an address with a zone")
		}
		r.prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
	case strings.EqualFold(host, "localhost"):
		// Loopback, named: both families.
		r.name = "localhost"
	default:
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			r.wildcard, name = true, rest
		}
		if err := checkHostName(name); err != nil {
			return r, err
		}
		r.name = name
	}
	return r, nil
}

// splitHostPort splits "host", "host:port", "[v6]", "[v6]:port", "v6" and
// ranges ("10.0.0.0/8:5432", "[2001:db8::/32]:443").
func splitHostPort(e string) (host, port string, err error) {
	if strings.HasPrefix(e, "[") {
		end := strings.Index(e, "]")
		if end < 0 {
			return "", "", fmt.Errorf("an opening [ without its ]")
		}
		host, rest := e[1:end], e[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("only :PORT may follow ]")
		}
		return host, rest[1:], nil
	}
	if strings.Count(e, ":") > 1 {
		return e, "", nil // a bare IPv6 address or range: no port
	}
	host, port, found := strings.Cut(e, ":")
	if found && port == "" {
		return "", "", fmt.Errorf("an empty port")
	}
	return host, port, nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// checkHostName accepts DNS names of letters, digits, hyphens and underscores
// (punycode for others), labels of 1 to 63 bytes, 253 in all.
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("no host name")
	}
	if len(name) > 253 {
		return fmt.Errorf("a host name longer than 253 bytes")
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("a host name label that is empty or longer than 63 bytes")
		}
		if strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return fmt.Errorf("a host name label that starts or ends with '-'")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				if c == '*' {
					return fmt.Errorf("'*' other than as the whole first label (*.example.com)")
				}
				return fmt.Errorf("%q in a host name (write other names in punycode)", rune(c))
			}
		}
	}
	if isAddr(name) {
		return fmt.Errorf("an address written as a name")
	}
	return nil
}

// Empty reports whether the list allows nothing.
func (a AllowHosts) Empty() bool { return len(a.rules) == 0 }

// Len is the number of entries.
func (a AllowHosts) Len() int { return len(a.rules) }

// Entries returns the entries as they were given.
func (a AllowHosts) Entries() []string {
	out := make([]string, len(a.rules))
	for i, r := range a.rules {
		out[i] = r.entry
	}
	return out
}

// NormalizeHost turns what a client asked to connect to into the form rules
// match: lower case, no trailing dot, an IPv6 address without brackets.
func NormalizeHost(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	return strings.ToLower(host)
}

// AllowsName reports whether a name entry covers host (normalized, not an
// address) on port.
func (a AllowHosts) AllowsName(host string, port uint16) bool {
	for _, r := range a.rules {
		if r.name == "" || !hasPort(r.ports, port) {
			continue
		}
		if r.wildcard && strings.HasSuffix(host, "."+r.name) || !r.wildcard && host == r.name {
			return true
		}
	}
	return false
}

// NamesAddr reports whether an address entry (or localhost:PORT for a loopback
// address) names addr on port explicitly: such a connection may go to an
// address the address rules would refuse.
func (a AllowHosts) NamesAddr(addr netip.Addr, port uint16) bool {
	addr = addr.Unmap()
	for _, r := range a.rules {
		if !hasPort(r.ports, port) {
			continue
		}
		if r.name == "localhost" && addr.IsLoopback() || r.prefix.IsValid() && r.prefix.Contains(addr) {
			return true
		}
	}
	return false
}

// AllowsTarget reports whether a connection to host (normalized) on port is
// allowed as the proxy matches one: an address literal only by an entry
// naming it (NamesAddr), localhost as 127.0.0.1, a name by a name entry
// (AllowsName; the addresses it resolves to are checked after).
func (a AllowHosts) AllowsTarget(host string, port uint16) bool {
	if addr, err := netip.ParseAddr(host); err == nil {
		return a.NamesAddr(addr, port)
	}
	if host == "localhost" {
		return a.NamesAddr(netip.MustParseAddr("127.0.0.1"), port)
	}
	return a.AllowsName(host, port)
}

// AllowsHostOnSomePort reports whether some entry names host (a normalized name
// or an address) on any port: it tells "port 22 not allowed" apart from "not in
// allowHosts".
func (a AllowHosts) AllowsHostOnSomePort(host string) bool {
	addr, err := netip.ParseAddr(host)
	isIP := err == nil
	for _, r := range a.rules {
		switch {
		case isIP && r.prefix.IsValid() && r.prefix.Contains(addr.Unmap()):
			return true
		case isIP && r.name == "localhost" && addr.IsLoopback():
			return true
		case !isIP && r.name != "" && (r.wildcard && strings.HasSuffix(host, "."+r.name) || !r.wildcard && host == r.name):
			return true
		}
	}
	return false
}

// Within reports whether every entry of a is covered by b (a narrows b), and
// names the first entry that is not.
func (a AllowHosts) Within(b AllowHosts) (bool, string) {
	for _, r := range a.rules {
		if !b.covers(r) {
			return false, r.entry
		}
	}
	return true, ""
}

// covers reports whether rule r allows nothing that a does not.
func (a AllowHosts) covers(r hostRule) bool {
	for _, port := range r.ports {
		ok := false
		for _, s := range a.rules {
			if !hasPort(s.ports, port) {
				continue
			}
			switch {
			case r.name == "localhost":
				ok = s.name == "localhost"
			case r.name != "":
				ok = s.name != "" && s.name != "localhost" && (s.wildcard && strings.HasSuffix(r.name, "."+s.name) ||
					!s.wildcard && !r.wildcard && s.name == r.name || s.wildcard && r.wildcard && s.name == r.name)
			default:
				ok = s.prefix.IsValid() && s.prefix.Bits() <= r.prefix.Bits() && s.prefix.Contains(r.prefix.Addr())
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func hasPort(ports []uint16, p uint16) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// LoopbackPort is an entry that names a port of loopback: localhost:PORT,
// 127.0.0.1:PORT or [::1]:PORT.
type LoopbackPort struct {
	Entry string // as given
	Host  string // "localhost", "127.0.0.1" or "::1"
	Port  uint16
}

// LoopbackPorts are the entries that name a port of loopback, in order (an
// entry without a port, or a range, is none of them).
func (a AllowHosts) LoopbackPorts() []LoopbackPort {
	var out []LoopbackPort
	for _, r := range a.rules {
		if len(r.ports) != 1 || r.wildcard {
			continue
		}
		switch {
		case r.name == "localhost":
			out = append(out, LoopbackPort{Entry: r.entry, Host: "localhost", Port: r.ports[0]})
		case r.name == "" && r.prefix.IsSingleIP() && r.prefix.Addr().IsLoopback() && (r.prefix.Addr() == netip.IPv6Loopback() || r.prefix.Addr() == netip.MustParseAddr("127.0.0.1")):
			out = append(out, LoopbackPort{Entry: r.entry, Host: r.prefix.Addr().String(), Port: r.ports[0]})
		}
	}
	return out
}

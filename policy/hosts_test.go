package policy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseAllowHostsRefuses(t *testing.T) {
	for _, c := range []struct{ entry, want string }{
		{"", "empty entry"},
		{"*", "use allowNetwork"},
		{"*:443", "use allowNetwork"},
		{"example.com:*", "name the port"},
		{"example.com:0", "not a number from 1 to 65535"},
		{"example.com:70000", "not a number from 1 to 65535"},
		{"example.com:", "an empty port"},
		{"https://example.com", "a URL"},
		{"exa mple.com", "not a host name"},
		{"user@example.com", "not a host name"},
		{"foo.*.com", "'*' other than"},
		{"*example.com", "'*' other than"},
		{"ex_ample..com", "label that is empty"},
		{"-example.com", "starts or ends with '-'"},
		{"exämple.com", "punycode"},
		{"10.0.0.0/33", "not an address range"},
		{"[2001:db8::1", "without its ]"},
		{"[2001:db8::1]x", "only :PORT"},
		{"fe80::1%eth0", "zone"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
	} {
		_, err := ParseAllowHosts("allowHosts", []string{"ok.example", c.entry})
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "allowHosts[1]") {
			t.Errorf("%q: %v, want an error with %q naming allowHosts[1]", c.entry, err, c.want)
		}
	}
	many := make([]string, MaxAllowHosts+1)
	for i := range many {
		many[i] = "example.com"
	}
	if _, err := ParseAllowHosts("allowHosts", many); err == nil || !strings.Contains(err.Error(), "at most 256") {
		t.Errorf("257 entries: %v", err)
	}
}

func mustParse(t *testing.T, entries ...string) AllowHosts {
	t.Helper()
	a, err := ParseAllowHosts("allowHosts", entries)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllowHostsMatching(t *testing.T) {
	a := mustParse(t, "Example.COM.", "*.pkg.dev", "api.test:8443", "localhost:5432", "10.1.2.0/24:5432", "192.0.2.7", "[2001:db8::/32]:443", "2001:db8:1::5")
	names := []struct {
		host string
		port uint16
		want bool
	}{
		{"example.com", 443, true}, {"example.com", 80, true}, {"example.com", 22, false},
		{"www.example.com", 443, false}, // not a wildcard entry
		{"a.pkg.dev", 443, true}, {"a.b.pkg.dev", 80, true}, {"pkg.dev", 443, false}, {"xpkg.dev", 443, false},
		{"api.test", 8443, true}, {"api.test", 443, false},
		{"localhost", 5432, true}, {"localhost", 80, false},
		{"evil.com", 443, false},
	}
	for _, c := range names {
		if got := a.AllowsName(c.host, c.port); got != c.want {
			t.Errorf("AllowsName(%s, %d) = %v", c.host, c.port, got)
		}
	}
	addrs := []struct {
		addr string
		port uint16
		want bool
	}{
		{"10.1.2.9", 5432, true}, {"10.1.2.9", 5433, false}, {"10.1.3.1", 5432, false},
		{"::ffff:10.1.2.9", 5432, true}, // mapped: the same address
		{"127.0.0.1", 5432, true}, {"::1", 5432, true}, {"127.0.0.1", 80, false},
		{"192.0.2.7", 443, true}, {"192.0.2.7", 8080, false},
		{"2001:db8:ffff::1", 443, true}, {"2001:db8:1::5", 80, true}, {"2001:db8:1::5", 22, false},
	}
	for _, c := range addrs {
		if got := a.NamesAddr(netip.MustParseAddr(c.addr), c.port); got != c.want {
			t.Errorf("NamesAddr(%s, %d) = %v", c.addr, c.port, got)
		}
	}
	if !a.AllowsHostOnSomePort("api.test") || a.AllowsHostOnSomePort("evil.com") || !a.AllowsHostOnSomePort("10.1.2.3") {
		t.Error("AllowsHostOnSomePort")
	}
}

func TestAllowHostsWithin(t *testing.T) {
	server := mustParse(t, "*.example.com", "api.test", "10.0.0.0/8:5432", "localhost:8080")
	for _, c := range []struct {
		call []string
		ok   bool
		bad  string
	}{
		{[]string{"a.example.com", "*.b.example.com", "api.test:443"}, true, ""},
		{[]string{"10.2.0.0/16:5432", "10.1.1.1:5432", "localhost:8080"}, true, ""},
		{[]string{"example.com"}, false, "example.com"}, // the apex is not a subdomain
		{[]string{"api.test:22"}, false, "api.test:22"},
		{[]string{"10.0.0.0/7:5432"}, false, "10.0.0.0/7:5432"},
		{[]string{"localhost:9090"}, false, "localhost:9090"},
		{[]string{"*.test"}, false, "*.test"},
	} {
		ok, bad := mustParse(t, c.call...).Within(server)
		if ok != c.ok || bad != c.bad {
			t.Errorf("%v within the server's list: %v %q, want %v %q", c.call, ok, bad, c.ok, c.bad)
		}
	}
}

func TestForbiddenAddr(t *testing.T) {
	own := func(a netip.Addr) bool { return a == netip.MustParseAddr("203.0.114.9") }
	for _, c := range []struct{ addr, want string }{
		{"93.184.215.14", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"10.0.0.5", "a private address 10.0.0.5"},
		{"172.31.255.1", "a private address"},
		{"192.168.1.1", "a private address"},
		{"127.0.0.1", "a loopback address"},
		{"127.9.9.9", "a loopback address"},
		{"0.0.0.0", "unspecified"},
		{"169.254.169.254", "a cloud metadata address 169.254.169.254"},
		{"169.254.1.1", "a link-local address"},
		{"100.100.100.200", "a cloud metadata address"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"168.63.129.16", "a cloud metadata address"},
		{"224.0.0.1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"::", "unspecified"},
		{"::1", "a loopback address"},
		{"fe80::1", "a link-local address"},
		{"fd12:3456::1", "a private (unique local) address"},
		{"fd00:ec2::254", "a cloud metadata address"},
		{"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "a loopback address 127.0.0.1 (IPv4-mapped ::ffff:127.0.0.1)"},
		{"::ffff:169.254.169.254", "a cloud metadata address"},
		{"64:ff9b::a00:5", "a private address 10.0.0.5 (NAT64"},
		{"64:ff9b::7f00:1", "a loopback address 127.0.0.1 (NAT64"},
		{"2002:a9fe:a9fe::1", "a cloud metadata address 169.254.169.254 (6to4"},
		{"2002:5db8:d70e::1", ""},  // 6to4 of a public address
		{"64:ff9b::5db8:d70e", ""}, // NAT64 of a public address
		{"64:ff9b:1::1", "local-use NAT64"},
		{"::7f00:1", "IPv4-compatible"},
		{"203.0.114.9", "this machine's own address"},
	} {
		got := ForbiddenAddr(netip.MustParseAddr(c.addr), own)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("ForbiddenAddr(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func FuzzParseAllowHosts(f *testing.F) {
	for _, s := range []string{"example.com", "*.example.com:8443", "[::1]:80", "10.0.0.0/8:22", "localhost:5432", "*:443", "a..b", "[", "::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		a, err := ParseAllowHosts("allowHosts", []string{entry})
		if err != nil {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "allowHosts[0]") {
				t.Fatalf("%q: error without the entry: %v", entry, err)
			}
			return
		}
		// A parsed entry allows something, on ports 1-65535, and is within itself.
		if a.Len() != 1 || a.Entries()[0] != entry {
			t.Fatalf("%q: entries %v", entry, a.Entries())
		}
		if ok, bad := a.Within(a); !ok {
			t.Fatalf("%q is not within itself (%q)", entry, bad)
		}
		for _, r := range a.rules {
			if len(r.ports) == 0 || (r.name == "") == !r.prefix.IsValid() {
				t.Fatalf("%q: rule %+v", entry, r)
			}
		}
	})
}

// TestAllowsTarget: the proxy's match of a connection's target, shared with
// the ceiling's hosts the user lets commands reach.
func TestAllowsTarget(t *testing.T) {
	a, err := ParseAllowHosts("allowHosts", []string{"example.com", "10.0.0.5:8080", "localhost:3000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port uint16
		want bool
	}{
		{"example.com", 443, true},
		{"example.com", 22, false},
		{"other.com", 443, false},
		{"10.0.0.5", 8080, true},
		{"10.0.0.5", 80, false},
		{"10.0.0.6", 8080, false},
		{"localhost", 3000, true},
		{"127.0.0.1", 3000, true},
		{"localhost", 3001, false},
	} {
		if got := a.AllowsTarget(c.host, c.port); got != c.want {
			t.Errorf("AllowsTarget(%s, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
}

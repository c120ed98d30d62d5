package policy

import (
	"strings"
	"testing"
)

// TestExactEntry: what a question may be about is one plain host name or one
// address, and the entry kept for it allows that host and port alone; every
// host whose entry would be read as a range, a wildcard or another syntax is
// refused (names a command looked up may be any bytes).
func TestExactEntry(t *testing.T) {
	for _, c := range []struct {
		host string
		port uint16
		want string
	}{
		{"example.com", 443, "example.com:443"},
		{"ask.test", 8001, "ask.test:8001"},
		{"localhost", 5432, "localhost:5432"},
		{"a_b.example", 80, "a_b.example:80"},
		{"127.0.0.1", 8001, "127.0.0.1:8001"},
		{"::ffff:127.0.0.1", 8001, "127.0.0.1:8001"},
		{"2001:db8::1", 443, "[2001:db8::1]:443"},
	} {
		got, err := ExactEntry(c.host, c.port)
		if err != nil || got != c.want {
			t.Errorf("ExactEntry(%q, %d) = %q, %v; want %q", c.host, c.port, got, err, c.want)
			continue
		}
		a, err := ParseAllowHosts("alwaysReach", []string{got})
		if err != nil || !a.AllowsTarget(c.host, c.port) || a.AllowsTarget(c.host, c.port+1) {
			t.Errorf("%s: does not allow exactly %s port %d: %v", got, c.host, c.port, err)
		}
	}
	for _, host := range []string{
		"127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8", "::/0", "[::1]", "0.0.0.0/0",
		"*.com", "*.test", "*", "foo.*.com", "Example.COM", "example.com.", "",
		"a b", "a:b", "a/b", "a@b", "a?b", "a#b", "exa\\mple", "fe80::1%eth0", "session:x:1",
		"example.com:80", "a..b", "-a.b", "ex\u00e4mple.com", strings.Repeat("a", 64) + ".com",
	} {
		if got, err := ExactEntry(host, 8001); err == nil {
			t.Errorf("ExactEntry(%q) = %q, want it refused", host, got)
		}
	}
	if _, err := ExactEntry("example.com", 0); err == nil {
		t.Error("port 0 allowed")
	}
}

func TestOneHost(t *testing.T) {
	for e, want := range map[string]bool{
		"example.com": true, "example.com:8443": true, "127.0.0.1:8001": true, "[::1]:443": true, "localhost:5432": true,
		"127.0.0.0/8:8001": false, "10.0.0.0/8": false, "*.test:8001": false, "*.com": false, "::/0": false, "bad entry": false,
	} {
		if got := OneHost(e); got != want {
			t.Errorf("OneHost(%q) = %v, want %v", e, got, want)
		}
	}
}

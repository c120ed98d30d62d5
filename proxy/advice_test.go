package proxy

import (
	"strings"
	"testing"
)

// TestAdviceNamesOneHost: the advice a denied command reads names the entry
// that allows the host it wanted, and only where that entry allows it alone:
// a name that reads as a range or a wildcard gets none, or the model would
// ask the user for a wildcard ("*.com:8001") on the command's word.
func TestAdviceNamesOneHost(t *testing.T) {
	for _, c := range []struct {
		host  string
		port  int
		entry string // "": no entry advised
	}{
		{"example.com", 8001, `allowHosts needs "example.com:8001"`},
		{"example.com", 443, `allowHosts needs "example.com"`},
		{"Example.COM.", 8001, `allowHosts needs "Example.COM.:8001"`},
		{"127.0.0.1", 8001, `allowHosts needs "127.0.0.1:8001"`},
		{"::1", 8001, `allowHosts needs "[::1]:8001"`},
		{"*.com", 8001, ""},
		{"*", 443, ""},
		{"127.0.0.0/8", 8001, ""},
		{"fe80::1%eth0", 8001, ""},
		{"a b", 80, ""},
	} {
		a := (&Denial{Host: c.host, Port: c.port, Reason: "not in allowHosts"}).Advice()
		switch {
		case c.entry != "" && !strings.Contains(a, c.entry):
			t.Errorf("%s:%d: %s", c.host, c.port, a)
		case c.entry == "" && (strings.Contains(a, "allowHosts needs") || !strings.Contains(a, "No allowHosts entry allows this host alone")):
			t.Errorf("%s:%d advises an entry: %s", c.host, c.port, a)
		}
	}
}

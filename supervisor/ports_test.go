package supervisor

import (
	"reflect"
	"strings"
	"testing"
)

// TestTakeSessionEntries: session:ID:PORT entries come out of allowHosts,
// checked; the other entries stay, in order; a list of session entries alone
// leaves an empty list (no host), not none (the server's default).
func TestTakeSessionEntries(t *testing.T) {
	for _, tc := range []struct {
		hosts   []string
		network bool
		rest    []string
		ports   []uint16
		err     string
	}{
		{hosts: nil, rest: nil},
		{hosts: []string{"example.com"}, rest: []string{"example.com"}},
		{hosts: []string{"session:s-1:3000"}, rest: []string{}, ports: []uint16{3000}},
		{hosts: []string{"a.test", "session:s-1:3000", "b.test:8443", "session:s-2:5173"}, rest: []string{"a.test", "b.test:8443"}, ports: []uint16{3000, 5173}},
		{hosts: []string{"session:s-1"}, err: "session:SESSION_ID:PORT"},
		{hosts: []string{"session::3000"}, err: "session:SESSION_ID:PORT"},
		{hosts: []string{"session:s-1:0"}, err: "not a number from 1 to 65535"},
		{hosts: []string{"session:s-1:x"}, err: "not a number from 1 to 65535"},
		{hosts: []string{"session:s-1:3128"}, err: "proxy"},
		{hosts: []string{"session:s-1:53"}, err: "autobox's own"},
		{hosts: []string{"session:s-1:3000", "session:s-2:3000"}, err: `allowHosts[1] "session:s-2:3000": port 3000 is already "session:s-1:3000"'s`},
		{hosts: []string{"session:s-1:3000"}, network: true, err: "expose: [3000]"},
	} {
		c := &execCall{}
		rest, err := c.takeSessionEntries(&ExecInput{AllowHosts: tc.hosts, AllowNetwork: tc.network})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want one saying %q", tc.hosts, err, tc.err)
			}
			continue
		}
		var ports []uint16
		for _, r := range c.routes {
			ports = append(ports, r.port)
		}
		if err != nil || !reflect.DeepEqual(rest, tc.rest) || (rest == nil) != (tc.rest == nil) || !reflect.DeepEqual(ports, tc.ports) {
			t.Errorf("%v: rest %#v, ports %v, err %v; want %#v, %v", tc.hosts, rest, ports, err, tc.rest, tc.ports)
		}
	}
}

package proxy

import (
	"net/netip"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// query builds a DNS query for name of type t.
func query(t *testing.T, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 42, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// answer parses a reply: its code and the A record's address, if any.
func answer(t *testing.T, r []byte) (dnsmessage.RCode, netip.Addr) {
	t.Helper()
	var m dnsmessage.Message
	if err := m.Unpack(r); err != nil {
		t.Fatal(err)
	}
	if m.ID != 42 || !m.Response || len(m.Questions) != 1 {
		t.Fatalf("reply %+v", m.Header)
	}
	for _, a := range m.Answers {
		if ar, ok := a.Body.(*dnsmessage.AResource); ok {
			return m.RCode, netip.AddrFrom4(ar.A)
		}
	}
	return m.RCode, netip.Addr{}
}

// TestTransparentResolver: the transparent path's resolver answers a listed
// name with a synthetic address that maps back to the name and the addresses
// pinned, the same one each time, and refuses (recording why) a name not
// listed, one that resolves to a private address only, and an address
// written as a name. AAAA of a listed name is answered empty.
func TestTransparentResolver(t *testing.T) {
	f := newFixture(t)
	answers := map[string][]netip.Addr{
		"api.test":      {netip.MustParseAddr("93.184.215.14")},
		"internal.test": {netip.MustParseAddr("10.0.0.5")},
	}
	f.p.resolver.lookupHook = func(host string) ([]netip.Addr, error) { return answers[host], nil }
	c := f.call("api.test", "internal.test", "db.test:5432")

	code, a := answer(t, c.answerDNS(query(t, "API.test.", dnsmessage.TypeA)))
	if code != dnsmessage.RCodeSuccess || !fakeRange.Contains(a) {
		t.Fatalf("api.test: %v %v", code, a)
	}
	if p, ok := c.fake.lookup(a); !ok || p.name != "api.test" || len(p.addrs) != 1 || p.addrs[0] != answers["api.test"][0] {
		t.Errorf("%v maps to %+v %v", a, p, ok)
	}
	if _, again := answer(t, c.answerDNS(query(t, "api.test.", dnsmessage.TypeA))); again != a {
		t.Errorf("a second lookup: %v, the first %v", again, a)
	}
	if code, a := answer(t, c.answerDNS(query(t, "api.test.", dnsmessage.TypeAAAA))); code != dnsmessage.RCodeSuccess || a.IsValid() {
		t.Errorf("AAAA: %v %v", code, a)
	}
	for _, name := range []string{"other.test.", "internal.test.", "10.0.0.5."} {
		if code, a := answer(t, c.answerDNS(query(t, name, dnsmessage.TypeA))); code != dnsmessage.RCodeRefused || a.IsValid() {
			t.Errorf("%s: %v %v", name, code, a)
		}
	}
	want := map[string]string{"other.test": "not in allowHosts", "internal.test": "resolves to a private address 10.0.0.5", "10.0.0.5": "not in allowHosts"}
	rec := c.Record()
	for _, d := range rec.Denied {
		if want[d.Host] == d.Reason && d.Port == 0 {
			delete(want, d.Host)
		}
	}
	if len(want) != 0 {
		t.Errorf("denials %+v, missing %v", rec.Denied, want)
	}
	// A connection to the name on a port its entries do not list is refused.
	if _, err := c.dialPinned(pinned{name: "api.test", addrs: answers["api.test"]}, 22); err == nil {
		t.Error("api.test:22 was dialled")
	}
	if c.Record().Denied[len(c.Record().Denied)-1] != (Denial{Host: "api.test", Port: 22, Reason: "port 22 not allowed"}) {
		t.Errorf("denials %+v", c.Record().Denied)
	}
}

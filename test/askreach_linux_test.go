//go:build linux

package test

import (
	"strings"
	"testing"
)

// TestAskReachTransparent: a program that ignores the proxy variables is
// asked about too: a name its list does not allow is answered with a synthetic
// address, without a lookup, and asked about when the program connects, with
// the port it connects to. (An address the program connects to is held the
// same way, as it arrives; loopback, the test's servers, stays inside the
// command's own network.)
func TestAskReachTransparent(t *testing.T) {
	f := newReachFixture(t, `{}`)
	requireTransparent(t)
	env := []string{"AUTOBOX_PROXY_RESOLVE=ask.test=127.0.0.1"}
	u := &asked{answer: "once"}
	s := f.startEnv(t, u, env)
	// The name's address is listed, as a name resolving to loopback needs.
	byName := `curl -sS --noproxy '*' http://ask.test:` + f.otherPort + `/`
	both := map[string]any{"allowHosts": []string{f.listed, f.other}}
	wantReached(t, "a name", f.curl(t, s, unsetProxy+byName, both))
	if u.count() != 1 || !strings.Contains(u.last().Message, "reach ask.test:"+f.otherPort+"?") {
		t.Fatalf("asked %d times", u.count())
	}
	u.set("no")
	o := f.curl(t, s, unsetProxy+byName, both)
	if o.Stdout == "other" || !strings.Contains(o.denied("ask.test", atoi(f.otherPort)), "not in allowHosts; the user answered no") {
		t.Errorf("a name refused: %+v %+v", o, o.Network)
	}
	// A client without elicitation: the lookup is refused, as before.
	s2 := f.startEnv(t, nil, env)
	o = f.curl(t, s2, unsetProxy+byName, both)
	if o.Stdout == "other" || o.denied("ask.test", 0) != "not in allowHosts" {
		t.Errorf("without elicitation: %+v %+v", o, o.Network)
	}
}

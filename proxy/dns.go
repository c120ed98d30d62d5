package proxy

import (
	"context"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/autobox-dev/autobox/policy"
)

// The resolver of the transparent path (see transparent.go): the command's
// /etc/resolv.conf names 127.0.0.1, and a query to any other server is
// redirected there too. It answers A queries for names the call's list allows
// (on some port) with the name's synthetic address, once the name resolved
// here to an address the rules let the list reach; other types of an allowed
// name get an empty answer (so IPv6 lookups fall back to the IPv4 one). Every
// other name is refused and recorded, so a tool fails at its lookup and the
// result says why.

// dnsTTL is the time to live of an answer: a later lookup pins the name's
// addresses again (its synthetic address stays).
const dnsTTL = 60

// maxDNSInFlight bounds the queries of a call being answered at once.
const maxDNSInFlight = 16

// serveDNS answers the queries arriving on pc until the call ends.
func (c *Call) serveDNS(pc net.PacketConn) {
	defer c.p.wg.Done()
	defer c.end()
	sem := make(chan struct{}, maxDNSInFlight)
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := append([]byte(nil), buf[:n]...)
		sem <- struct{}{}
		if !c.begin() {
			return
		}
		c.p.wg.Add(1)
		go func() {
			defer c.p.wg.Done()
			defer c.end()
			defer func() { <-sem }()
			if r := c.answerDNS(q); r != nil {
				_, _ = pc.WriteTo(r, from)
			}
		}()
	}
}

// answerDNS is the reply to the query q, or nil for what is not a query.
func (c *Call) answerDNS(q []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	reply := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	qs, err := p.AllQuestions()
	if err != nil || len(qs) != 1 || h.OpCode != 0 {
		reply.RCode = dnsmessage.RCodeFormatError
		if err == nil && h.OpCode != 0 {
			reply.RCode = dnsmessage.RCodeNotImplemented
		}
		return buildDNS(reply, qs, netip.Addr{})
	}
	question := qs[0]
	var fake netip.Addr
	reply.RCode, fake = c.resolveForCommand(policy.NormalizeHost(question.Name.String()), question.Type)
	return buildDNS(reply, qs, fake)
}

// resolveForCommand decides a lookup of name for a query of type t: the
// answer's code and, for an A query of a usable name, its synthetic address.
func (c *Call) resolveForCommand(name string, t dnsmessage.Type) (dnsmessage.RCode, netip.Addr) {
	deny := func(code dnsmessage.RCode, reason string) (dnsmessage.RCode, netip.Addr) {
		c.rec.deny(Denial{Host: name, Reason: reason})
		return code, netip.Addr{}
	}
	if _, err := netip.ParseAddr(name); err == nil || name == "" || (!c.allow.AllowsHostOnSomePort(name) && c.asking.ask == nil) {
		return deny(dnsmessage.RCodeRefused, "not in allowHosts")
	}
	if t != dnsmessage.TypeA && t != dnsmessage.TypeALL {
		return dnsmessage.RCodeSuccess, netip.Addr{}
	}
	if !c.allow.AllowsHostOnSomePort(name) {
		// The user may allow it (ask.go): a synthetic address, no lookup;
		// the question comes with the connection, and its port. Not for a
		// name that reads as a range or a wildcard: no question is about one.
		if err := policy.AskableHost(name); err != nil {
			return deny(dnsmessage.RCodeRefused, "not in allowHosts; the user was not asked: "+err.Error())
		}
		fake, ok := c.fake.pin(name, nil)
		if !ok {
			return deny(dnsmessage.RCodeRefused, "too many names looked up in one call")
		}
		return dnsmessage.RCodeSuccess, fake
	}
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	addrs, err := c.p.resolver.lookup(ctx, name)
	if err != nil {
		return deny(dnsmessage.RCodeNameError, "does not resolve: "+err.Error())
	}
	why := ""
	usable := false
	for _, a := range addrs {
		if reason := policy.ForbiddenAddr(a.Unmap(), c.p.resolver.own); reason == "" || c.allow.AllowsHostOnSomePort(a.Unmap().String()) {
			usable = true
		} else {
			why = reason
		}
	}
	if !usable {
		return deny(dnsmessage.RCodeRefused, "resolves to "+why)
	}
	fake, ok := c.fake.pin(name, addrs)
	if !ok {
		return deny(dnsmessage.RCodeRefused, "too many names looked up in one call")
	}
	return dnsmessage.RCodeSuccess, fake
}

// buildDNS builds a reply: the header, the question, and an A record of addr
// if it is valid.
func buildDNS(h dnsmessage.Header, qs []dnsmessage.Question, addr netip.Addr) []byte {
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	if b.StartQuestions() != nil {
		return nil
	}
	for _, q := range qs {
		if b.Question(q) != nil {
			return nil
		}
	}
	if addr.IsValid() && len(qs) == 1 {
		if b.StartAnswers() != nil {
			return nil
		}
		rh := dnsmessage.ResourceHeader{Name: qs[0].Name, Class: dnsmessage.ClassINET, TTL: dnsTTL}
		if b.AResource(rh, dnsmessage.AResource{A: addr.As4()}) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

package proxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/autobox-dev/autobox/policy"
)

// Asking the user mid-command. A call registered with an Asker does not deny
// a host:port its list does not allow at once: the connection (an HTTP
// request, a CONNECT or SOCKS5 tunnel, a redirected connection, a fetch) is
// held while the Asker puts the question to the user, and goes on if they
// allow it. The proxy knows nothing of who asks or how (package supervisor
// asks through MCP elicitation); it only bounds the asking, for the command
// that makes the proxy ask is untrusted:
//
//   - one question at a time per host:port of a call: other connections to the
//     same target wait for that answer, and take it;
//   - an answer is kept for the rest of the call: allowed, the target is as
//     good as listed; refused (no, no answer, a dismissed question), the
//     target is denied without a question;
//   - at most MaxQuestions questions per call; past them, denied without one;
//   - only about one plain host name or one address (policy.ExactEntry): a
//     name that reads as a range or a wildcard is denied without a question.
//
// The transparent path's resolver does not hold the lookup of a name the list
// does not allow: it answers with a synthetic address for the name, without
// looking it up (nothing about the name leaves the machine before the user
// allows it), and the question comes when the command connects to it, with
// the port it connects to. A lookup held for the user's thinking time would
// fail anyway: resolvers give up after a few seconds.

// Asker asks the user whether a call may reach host:port, which its list does
// not allow: nil lets it, an error says why not, in a few words ("the user
// answered no"). ctx ends with the call.
type Asker func(ctx context.Context, host string, port int) error

// MaxQuestions bounds the questions one call may make the proxy ask.
const MaxQuestions = 4

type target struct {
	host string
	port uint16
}

// asking is a call's questions and their answers.
type asking struct {
	ask Asker // nil: deny at once

	mu      sync.Mutex
	granted map[target]bool
	refused map[target]string    // why
	pending map[target]chan bool // closed when answered
	asked   int
}

// grantedTarget reports whether the user allowed host:port in this call.
func (a *asking) grantedTarget(host string, port uint16) bool {
	if a.ask == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.granted[target{host, port}]
}

// allowed asks the user about host:port (or takes the answer given before in
// this call); "" when allowed, else why not.
func (a *asking) allowed(ctx context.Context, host string, port uint16) string {
	if a.ask == nil {
		return "no one to ask"
	}
	// A question names one host and one port, and its answer allows that
	// alone: a name the command chose that reads as a range or a wildcard
	// ("127.0.0.0/8", "*.com") is not asked about.
	if _, err := policy.ExactEntry(host, port); err != nil {
		return "the user was not asked: " + err.Error()
	}
	t := target{host, port}
	a.mu.Lock()
	for {
		if a.granted[t] {
			a.mu.Unlock()
			return ""
		}
		if why, ok := a.refused[t]; ok {
			a.mu.Unlock()
			return why
		}
		ch, ok := a.pending[t]
		if !ok {
			break
		}
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "the call ended while the user was asked"
		}
		a.mu.Lock()
	}
	if a.asked >= MaxQuestions {
		a.mu.Unlock()
		return fmt.Sprintf("the user was not asked: this call already asked %d questions, the most one call may", MaxQuestions)
	}
	a.asked++
	if a.pending == nil {
		a.granted, a.refused, a.pending = map[target]bool{}, map[target]string{}, map[target]chan bool{}
	}
	ch := make(chan bool)
	a.pending[t] = ch
	a.mu.Unlock()

	err := a.ask(ctx, host, int(port))

	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, t)
	close(ch)
	if err != nil {
		a.refused[t] = err.Error()
		return err.Error()
	}
	a.granted[t] = true
	return ""
}

// askOrDeny is the outcome for host:port, which the call's list does not
// allow: nil when the user allows it (asked now, or earlier in the call), else
// the denial, with the user's answer in its reason when they were asked.
func (c *Call) askOrDeny(ctx context.Context, host string, port uint16) *Denial {
	if c.asking.ask == nil {
		return c.notListed(host, port)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(c.ctx, cancel)()
	defer cancel()
	why := c.asking.allowed(ctx, host, port)
	if why == "" {
		return nil
	}
	d := c.notListed(host, port)
	d.Reason += "; " + why
	return d
}

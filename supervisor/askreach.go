package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/internal/flaghint"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
)

// Asking the user about a host a running command wants. A call with allowHosts
// whose command (or execute_js fetch) connects to a host:port its list does
// not allow, started by a client that can elicit, has the proxy hold that
// connection (package proxy, ask.go there) while the user is asked "Let this
// command (curl …) reach HOST:PORT?": once lets this call reach it; session
// lets every later command of this server reach it too; always writes it to
// the ceiling file's alwaysReach as well (package ceiling, reach.go). A host:port
// beyond the ceiling's allowHosts rule is asked about the same way, and the
// answer widens that rule as an answer about a call's arguments does (the
// question says so); one the server's --allow-host list leaves out is denied
// unasked. The proxy bounds the asking: one question per host:port at a time,
// a refusal kept for the call, at most proxy.MaxQuestions questions a call.
//
// Time: the wait for the answer is the user's, not the command's. While a
// command waits for one, its timeoutMs clock stops (cmdrun.Clock), so the user's
// thinking does not kill it; each wait is bounded by --ask-timeout, and the
// questions of a call by proxy.MaxQuestions, so a call runs at most
// MaxQuestions × --ask-timeout past its timeoutMs. execute_js's clock runs in
// its isolate and does not stop: its fetch waits within the call's timeoutMs
// (and the fetch's own 30 s).
//
// On MCP 2026-07-28 the question is the call's answer, input_required, while
// the command waits; the client's retry of the call brings the answer and
// takes the command's result (roundtrip.go).
//
// Not asked: a client without elicitation (denied at once, as before), and an
// exec_command session's command (yieldMs): it outlives the call that started
// it, and a question would come to the user unbidden.

// reachAsker is the proxy's Asker for a call started with ctx (nil where no
// one can be asked); what names the call in the question, pause stops the
// call's clock while the user is asked (nil: nothing to stop).
func (s *Server) reachAsker(ctx context.Context, what string, pause func() (resume func())) proxy.Asker {
	l := lineOf(ctx)
	if l == nil {
		return nil
	}
	return func(actx context.Context, host string, port int) error {
		return s.askReach(actx, l, what, host, uint16(port), pause)
	}
}

// askReach asks the user whether the call may reach host:port; nil: it may.
func (s *Server) askReach(ctx context.Context, l *line, what, host string, port uint16, pause func() func()) error {
	// The entry the answer is kept as allows this host and port alone (the
	// proxy asks about nothing else; checked again here, where it is written).
	entry, err := policy.ExactEntry(host, port)
	if err != nil {
		return errors.New("the user was not asked: " + err.Error())
	}
	one, err := policy.ParseAllowHosts("allowHosts", []string{entry})
	if err != nil {
		return errors.New("the user was not asked: no allowHosts entry can name it")
	}
	if !s.defaultHosts.Empty() {
		if ok, _ := one.Within(s.defaultHosts); !ok {
			return errors.New("the user was not asked: it is beyond the server's list (" + flaghint.Serve(flaghint.AllowHost) + ")")
		}
	}
	c := s.Ceiling()
	if c.Reaches(&s.grants, host, port) {
		return nil // allowed meanwhile, for the session or always
	}
	es := c.Check(ceiling.Request{AllowHosts: []string{entry}}, &s.grants)
	always := true
	for _, e := range es {
		if !e.Askable {
			return errors.New("the user was not asked: " + e.Error())
		}
		if c.FromFlag(e.Rule) {
			always = false
		}
	}
	if pause != nil {
		defer pause()()
	}
	answer, why := s.put(ctx, l, func(timeout time.Duration) *mcp.ElicitParams {
		if s.Ceiling().Reaches(&s.grants, host, port) {
			return nil
		}
		return s.question(c, what, []string{"reach " + shownText(entry)}, len(es) > 0, always, timeout)
	})
	switch {
	case why != "" && ctx.Err() != nil:
		return errors.New("the call ended while the user was asked")
	case why != "":
		return errors.New(why)
	case answer == "": // allowed meanwhile
	case answer == answerOnce:
		s.log.Info("the user let a command reach a host, once", "call", what, "host", entry)
	case answer == answerSession:
		s.grants.Apply(es)
		s.grants.Reach(entry)
		s.log.Info("the user let commands reach a host for this session", "call", what, "host", entry)
	case answer == answerAlways && always:
		s.grants.Apply(es)
		s.grants.Reach(entry)
		if err := ceiling.Update(c.File, func(f *ceiling.File) { ceiling.Edit(f, es); ceiling.EditReach(f, entry) }); err != nil {
			s.log.Error("the user let commands reach a host always, but the ceiling file could not be written; allowed for this session", "host", entry, "err", err)
		}
	default:
		return errors.New("the user answered no")
	}
	return nil
}

// withReach is a call's list with the hosts the user lets every command reach
// (the ceiling file's alwaysReach, this session's answers), those within the
// server's --allow-host list.
func (s *Server) withReach(hosts policy.AllowHosts) policy.AllowHosts {
	reach := s.Ceiling().ReachEntries(&s.grants)
	if len(reach) == 0 {
		return hosts
	}
	entries := hosts.Entries()
	for _, e := range reach {
		one, err := policy.ParseAllowHosts("alwaysReach", []string{e})
		if err != nil {
			continue
		}
		if ok, _ := one.Within(s.defaultHosts); s.defaultHosts.Empty() || ok {
			entries = append(entries, e)
		}
	}
	merged, err := policy.ParseAllowHosts("allowHosts", entries)
	if err != nil {
		s.log.Error("the hosts the user lets commands reach could not be added to a call's list", "err", fmt.Sprint(err))
		return hosts
	}
	return merged
}

package supervisor

import "fmt"

// What a command killed at its time limit is told (issue 30): which parameter
// to raise, to what at most (the tool's bound, or the user's ceiling where that
// is lower), and that yieldMs keeps a longer job as a session. The first line
// keeps its documented start, "killed: timeout after <n>ms", which the command
// line reads its exit status from.

// timeoutCaps are the most timeoutMs a call could have asked for, without
// yieldMs and with it, after the user's ceiling; ceilinged says the ceiling
// set the first.
type timeoutCaps struct {
	oneShot, session int
	ceilinged        bool
}

// defaultCaps are the tool's own caps.
var defaultCaps = timeoutCaps{oneShot: int(execTimeoutMs.max), session: int(sessionTimeoutMs.max)}

// timeoutCaps are this server's caps now.
func (s *Server) timeoutCaps() timeoutCaps {
	t := defaultCaps
	if max := s.Ceiling().Limit("timeoutMs", &s.grants); max > 0 {
		if max < t.oneShot {
			t.oneShot, t.ceilinged = max, true
		}
		t.session = min(t.session, max)
	}
	return t
}

// userCap names the user's ceiling as the cap of timeoutMs.
const userCap = "the most the user's ceiling allows (their ceiling file's \"limits.timeoutMs\", or autobox serve --max-timeout-ms)"

// timeoutNote is the first line of the stderr of a command killed at
// timeoutMs (c.timeoutMs), without its newline.
func (c *execCall) timeoutNote() string {
	head := fmt.Sprintf("killed: timeout after %dms", c.timeoutMs)
	caps := c.caps
	if c.yield != nil {
		switch {
		case c.timeoutMs < caps.session:
			return head + fmt.Sprintf(" (the session's timeoutMs): start it again with a larger timeoutMs, at most %d", caps.session)
		case caps.session < int(sessionTimeoutMs.max):
			return head + " (the session's timeoutMs, " + userCap + ")"
		}
		return head + " (the session's timeoutMs, the most a session may have)"
	}
	if caps.session > caps.oneShot {
		session := fmt.Sprintf("pass yieldMs (e.g. 10000) to keep a longer job running as a session, driven with exec_session (its timeoutMs up to %d)", caps.session)
		if c.timeoutMs < caps.oneShot {
			return head + fmt.Sprintf(": raise timeoutMs (at most %d without yieldMs), or %s", caps.oneShot, session)
		}
		return head + ", the most timeoutMs may be without yieldMs: " + session
	}
	// The ceiling holds a session to what it holds this call to.
	if c.timeoutMs < caps.oneShot {
		return head + fmt.Sprintf(": raise timeoutMs (at most %d, %s)", caps.oneShot, userCap)
	}
	return head + ", " + userCap
}

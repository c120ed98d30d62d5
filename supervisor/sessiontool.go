package supervisor

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/session"
)

// SessionInput is the exec_session argument object.
type SessionInput struct {
	SessionID  string  `json:"sessionId,omitempty" jsonschema:"the session, as exec_command with yieldMs answered (every action but list)"`
	Action     string  `json:"action" jsonschema:"poll: the output since the last answer, waiting up to yieldMs for some (the command's end gives its final result, once); write: send input, then poll; signal: send signal, then poll; close: kill the whole tree and give the final result; list: the open sessions"`
	Input      *string `json:"input,omitempty" jsonschema:"write: text for the command's stdin (at most 64 KB); on a tty, keys as characters: \\u0003 is Ctrl-C, \\u0004 Ctrl-D, \\r Enter"`
	YieldMs    *int    `json:"yieldMs,omitempty" jsonschema:"poll: wait this long and answer with what came meanwhile (sooner when the command ends, an answer's worth is waiting, or a line matches until); write, signal: wait up to this long for output, answering once it has come and paused"`
	Until      string  `json:"until,omitempty" jsonschema:"poll, write, signal: a regular expression (RE2, e.g. \"Listening on|ERROR\"); the answer goes as soon as a line of the output matches it (one not read yet, or one that comes; a prompt being written counts), or at yieldMs, or at the command's end"`
	Signal     string  `json:"signal,omitempty" jsonschema:"signal: INT (on a tty to its foreground job, as Ctrl-C), TERM or KILL (to the command's process group)"`
	CloseStdin bool    `json:"closeStdin,omitempty" jsonschema:"write: close the command's stdin after the input (end of file); not on a tty, where \\u0004 is end of input"`
}

// SessionOutput is the exec_session result: an exec_command result, or for
// list the open sessions.
type SessionOutput struct {
	ExecOutput
	Sessions *[]SessionInfo `json:"sessions,omitempty" jsonschema:"list: the open sessions, oldest first"`
}

// SessionInfo describes an open session.
type SessionInfo struct {
	SessionID string       `json:"sessionId"`
	Command   string       `json:"command" jsonschema:"the command line as given"`
	TTY       bool         `json:"tty" jsonschema:"it runs on a pseudo-terminal"`
	State     string       `json:"state" jsonschema:"running, or ended: its final result waits for a poll"`
	AgeMs     float64      `json:"ageMs" jsonschema:"time since it started"`
	IdleMs    float64      `json:"idleMs" jsonschema:"time since the last call that named it; at the server's idle limit it is ended"`
	Ports     []PortReport `json:"ports,omitempty" jsonschema:"its exposed ports (expose), while it runs"`
}

// sessionActions are exec_session's actions; the first is the default of none.
var sessionActions = []string{"poll", "write", "signal", "close", "list"}

// sessionSignals are the signals exec_session sends.
var sessionSignals = []string{"INT", "TERM", "KILL"}

// ExecSession runs one exec_session call. Safe for concurrent use. The bool
// says the result is a tool error (a kill nobody asked for ended the command).
func (s *Server) ExecSession(ctx context.Context, in *SessionInput) (*SessionOutput, bool, error) {
	start := time.Now()
	if err := validateSession(in); err != nil {
		return nil, false, err
	}
	wait := time.Duration(sessionYieldMs.def) * time.Millisecond
	if in.YieldMs != nil {
		wait = time.Duration(*in.YieldMs) * time.Millisecond
	}
	var a *session.Answer[sessionEnd]
	var err error
	w := session.Wait{For: wait}
	if in.Until != "" {
		w.Until = regexp.MustCompile(in.Until) // validated
	}
	if in.Action != "list" && in.Action != "close" {
		stop := reportProgress(ctx, start, wait, func() string { return lastLine(s.sessions.Latest(in.SessionID)) })
		defer stop()
	}
	switch in.Action {
	case "list":
		return s.listSessions(start), false, nil
	case "poll":
		w.Full = true // what came in yieldMs, not the first burst
		a, err = s.sessions.Poll(ctx, in.SessionID, w)
	case "write":
		a, err = s.sessions.Write(ctx, in.SessionID, []byte(*in.Input), in.CloseStdin, w)
	case "signal":
		a, err = s.sessions.Signal(ctx, in.SessionID, in.Signal, w)
	case "close":
		a, err = s.sessions.Close(ctx, in.SessionID)
	}
	if err != nil {
		return nil, false, err
	}
	out, isErr := sessionOutput(a, s.opts.Unsafe)
	if a.Running {
		out.Ports = s.portReports(a.ID) // ports.go
	}
	return &SessionOutput{ExecOutput: *out}, isErr, nil
}

// validateSession checks which parameters an action takes, and their values.
func validateSession(in *SessionInput) error {
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", policy.ErrInvalid, fmt.Sprintf(format, a...))
	}
	switch in.Action {
	case "list":
		if in.SessionID != "" || in.Input != nil || in.Signal != "" || in.YieldMs != nil || in.CloseStdin || in.Until != "" {
			return refuse("list takes no other parameter")
		}
		return nil
	case "poll", "write", "signal", "close":
	case "":
		return refuse("action is required: poll, write, signal, close or list")
	default:
		return refuse("action %q is not poll, write, signal, close or list", in.Action)
	}
	if in.SessionID == "" {
		return refuse("%s needs sessionId (exec_command with yieldMs answers with it)", in.Action)
	}
	if in.Until != "" {
		if in.Action == "close" {
			return refuse("close takes no until: it waits for the end")
		}
		if _, err := regexp.Compile(in.Until); err != nil {
			return refuse("until is not a regular expression (RE2 syntax): %v", err)
		}
	}
	if in.YieldMs != nil {
		if in.Action == "close" {
			return refuse("close takes no yieldMs: it waits for the end")
		}
		if _, err := bounded(sessionYieldMs, in.YieldMs); err != nil {
			return err
		}
	}
	if in.Action != "write" && (in.Input != nil || in.CloseStdin) {
		return refuse("input and closeStdin are for write, not %s", in.Action)
	}
	if in.Action != "signal" && in.Signal != "" {
		return refuse("signal is for the signal action, not %s", in.Action)
	}
	switch in.Action {
	case "write":
		if in.Input == nil && !in.CloseStdin {
			return refuse("write needs input (or closeStdin)")
		}
		if in.Input == nil {
			in.Input = new(string)
		}
		if len(*in.Input) > maxInputBytes {
			return refuse("input is %d bytes, at most %d allowed", len(*in.Input), maxInputBytes)
		}
	case "signal":
		if in.Signal == "" {
			in.Signal = sessionSignals[0]
		}
		ok := false
		for _, sig := range sessionSignals {
			ok = ok || in.Signal == sig
		}
		if !ok {
			return refuse("signal %q is not INT, TERM or KILL", in.Signal)
		}
	}
	return nil
}

// listSessions is the answer of list.
func (s *Server) listSessions(start time.Time) *SessionOutput {
	infos := []SessionInfo{}
	now := time.Now()
	for _, i := range s.sessions.List() {
		state := "running"
		if i.Ended {
			state = "ended"
		}
		infos = append(infos, SessionInfo{
			SessionID: i.ID, Command: i.Command, TTY: i.Terminal, State: state,
			AgeMs:  float64(now.Sub(i.Started).Milliseconds()),
			IdleMs: float64(now.Sub(i.LastCall).Milliseconds()),
		})
		if !i.Ended {
			infos[len(infos)-1].Ports = s.portReports(i.ID) // ports.go
		}
	}
	out := &SessionOutput{Sessions: &infos}
	out.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	return out
}

// sessionFailed is the result of a refused exec_session call, shaped as a
// refused exec_command's.
func sessionFailed(err error) *SessionOutput {
	return &SessionOutput{ExecOutput: *execFailed(err)}
}

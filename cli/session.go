package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/autobox-dev/autobox/supervisor"
)

// Sessions on the command line. A session belongs to the server process that
// started it, and a command line's process ends with its command: so
// `autobox exec --yield` hands the call to a session server, an autobox process
// of the user's own that it starts when none is running (`autobox session
// serve`, listening on an abstract unix socket named in the state dir, which
// only the same user, and no sandboxed process, may use), and
// `autobox session ...` talk to it. The server ends a few seconds
// after its last session; its sessions end with it. Sessions of an MCP server
// are that server's: their ids mean nothing here, and these mean nothing there.

const sessionHelp = `Usage: autobox session poll|close [flags] ID
       autobox session write [flags] ID [TEXT | -]
       autobox session signal [flags] ID [INT|TERM|KILL]
       autobox session list [--json]
       autobox session serve

Drive a command that 'autobox exec --yield' left running (a session), exactly as
the exec_session tool does:

  poll     print the output that came in --yield (sooner at the command's end, or at a
           line matching --until); once the command has ended, its final output,
           and exit with its status
  write    send TEXT (or stdin, with - or no TEXT) to the command's stdin, then poll;
           on a tty, control keys as characters: $'\x03' is Ctrl-C, $'\x04' Ctrl-D
  signal   send INT (the default), TERM or KILL, then poll
  close    kill the command's whole tree and print its final output; exit 0 once the
           session is gone (--json shows how the command ended)
  list     the open sessions: id, state, age, idle time, command
  serve    run the session server in the foreground (exec --yield starts one itself)

Sessions live in a session server of your own, one per state dir
($AUTOBOX_STATE_DIR), on an abstract unix socket that $AUTOBOX_STATE_DIR/sessions.lock
names; it serves your uid only and never a sandboxed process (a command run by
autobox cannot drive autobox). It ends a few seconds after its last session, and
its sessions end with it. They do not
cross to other servers: an MCP server's session ids are unknown here. A session
ends at its --timeout, on close, after 10 minutes without a call, and with the
session server.

While the command runs, poll, write and signal exit 0 (--json says running: true);
its final answer exits as exec does. With --json each prints the result object.

` + exitCodesHelp + `
Examples:
  id=$(autobox exec --yield 2s --network --timeout 1h -- python3 -u -m http.server 8000)
  autobox exec --network -- curl -s localhost:8000 | head
  autobox session poll "$id"
  id=$(autobox exec --yield 1s --tty -- python3 -i)
  autobox session write "$id" $'print(6*7)\n'
  autobox session signal "$id" INT
  autobox session close "$id"
`

// printSession prints a session's answer: while it runs, its output; its final
// answer as exec prints a result. It returns the exit status.
func (e *env) printSession(cmd string, out *supervisor.SessionOutput, asJSON bool) int {
	if asJSON {
		status := ExitOK
		if !out.Running {
			status = e.execStatus(&out.ExecOutput)
		}
		return e.printed(cmd, writeJSON(e.stdout, out), status)
	}
	return e.printOutput(cmd, &out.ExecOutput, out.Running)
}

func (e *env) session(args []string) int {
	fs := newFlags("session")
	yield := optMillis()
	fs.Var(&yield, "yield", "poll, write, signal: wait up to this long for output: milliseconds or a duration like 2s (default 1s, max 30s)")
	until := fs.String("until", "", "poll, write, signal: answer as soon as a line of the output matches this regular expression (RE2)")
	closeStdin := fs.Bool("close-stdin", false, "write: close the command's stdin after TEXT (end of file)")
	jsonOut := fs.Bool("json", false, "print the result object as JSON")
	readyFD := fs.Int("ready-fd", 0, "serve: say ok on this inherited descriptor once listening (for the autobox that starts it)")
	action, done, status := e.action("session", sessionHelp, fs, args, "poll", "write", "signal", "close", "list", "serve")
	if done {
		return status
	}
	pos, done, status := e.parse(fs, "session", sessionHelp, args[1:])
	if done {
		return status
	}
	if action == "serve" {
		if len(pos) > 0 {
			return e.usage("session", "serve takes no arguments")
		}
		return e.serveSessions(*readyFD)
	}
	in := &supervisor.SessionInput{Action: action, YieldMs: yield.v, Until: *until, CloseStdin: *closeStdin}
	switch action {
	case "list":
		if len(pos) > 0 {
			return e.usage("session", "list takes no arguments")
		}
	case "poll", "close":
		if len(pos) != 1 {
			return e.usage("session", "%s takes one session id", action)
		}
	case "write":
		if len(pos) < 1 || len(pos) > 2 {
			return e.usage("session", "write takes a session id and TEXT (or - for stdin)")
		}
		if len(pos) == 2 && pos[1] != "-" {
			in.Input = &pos[1]
		} else if !*closeStdin || len(pos) == 2 {
			if isTerminal(e.stdin) && len(pos) == 1 {
				return e.usage("session", "no TEXT: give it, or - to read it from stdin")
			}
			b, err := io.ReadAll(io.LimitReader(e.stdin, 1<<20))
			if err != nil {
				return e.usage("session", "reading stdin: %v", err)
			}
			text := string(b)
			in.Input = &text
		}
	case "signal":
		if len(pos) < 1 || len(pos) > 2 {
			return e.usage("session", "signal takes a session id and INT, TERM or KILL")
		}
		if len(pos) == 2 {
			in.Signal = strings.TrimPrefix(strings.ToUpper(pos[1]), "SIG")
		}
	}
	if len(pos) > 0 {
		in.SessionID = pos[0]
	}
	out, err := e.sessionCall("exec_session", in)
	if err != nil {
		return e.fail("session", err)
	}
	if action == "list" {
		if *jsonOut {
			return e.printed("session", writeJSON(e.stdout, out.Sessions), ExitOK)
		}
		return e.printed("session", e.printSessions(out), ExitOK)
	}
	status = e.printSession("session", out, *jsonOut)
	if action == "close" {
		// The session is gone, as asked: a script under set -e goes on. How its
		// command ended is in what was printed (--json: exitCode, killed).
		return ExitOK
	}
	return status
}

// printSessions prints list's answer for people.
func (e *env) printSessions(out *supervisor.SessionOutput) error {
	w := &errWriter{w: e.stdout}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAGE\tIDLE\tCOMMAND")
	if out.Sessions != nil {
		for _, s := range *out.Sessions {
			state := s.State
			if s.TTY {
				state += " (tty)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.SessionID, state, ms(s.AgeMs), ms(s.IdleMs), shown(s.Command))
		}
	}
	tw.Flush()
	if out.Sessions != nil {
		for _, s := range *out.Sessions {
			for _, p := range s.Ports { // exec --expose
				fmt.Fprintf(w, "%s: port %d is at %s\n", s.SessionID, p.Port, p.URL)
			}
		}
	}
	return w.err
}

func ms(v float64) string {
	return (time.Duration(v) * time.Millisecond).Round(time.Second).String()
}

// execYield is `autobox exec --yield`: the call goes to the session server.
// While the command runs, its session id goes to stdout and its output so far
// to stderr, so that id=$(autobox exec --yield ...) works; an answer that is
// final is printed as exec prints one.
func (e *env) execYield(in *supervisor.ExecInput, asJSON bool) int {
	out, err := e.sessionCall("exec_command", in)
	if err != nil {
		return e.fail("exec", err)
	}
	if asJSON || !out.Running {
		return e.printSession("exec", out, asJSON)
	}
	io.WriteString(e.stderr, out.Stdout)
	io.WriteString(e.stderr, out.Stderr)
	fmt.Fprintln(e.stdout, out.SessionID)
	fmt.Fprintf(e.stderr, "autobox exec: the command runs on as session %s (autobox session poll|write|signal|close %s)\n", out.SessionID, out.SessionID)
	for _, p := range out.Ports {
		fmt.Fprintf(e.stderr, "autobox exec: port %d of the session is at %s until it ends\n", p.Port, p.URL)
	}
	return ExitOK
}

// sessionRequest is one call to the session server: a line of JSON, answered
// by a sessionReply line (after reports of progress, if asked for).
type sessionRequest struct {
	Tool      string          `json:"tool"` // exec_command or exec_session
	Arguments json.RawMessage `json:"arguments"`
	Progress  bool            `json:"progress,omitempty"` // report while the call runs (a terminal draws them)
}

// sessionReply is the answer to a sessionRequest: the tool's result object, or
// why the call was refused (in the tools' words); or, before it, a report of
// the call's progress.
type sessionReply struct {
	Result   *supervisor.SessionOutput `json:"result,omitempty"`
	Error    string                    `json:"error,omitempty"`
	Progress *supervisor.Progress      `json:"progress,omitempty"`
}

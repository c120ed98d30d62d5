package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/session"
	"github.com/autobox-dev/autobox/store"
)

// Sessions: exec_command with yieldMs starts its command as package session
// keeps it (with a terminal if tty), and answers after at most yieldMs; exec_session polls,
// writes, signals, closes and lists. A session is an exec_command call that
// outlives its first answer: the same launcher, sandbox, RSS watchdog, memory
// cgroup and time limit, for the command's whole life; it ends with its
// command, at its timeoutMs, on close, after the server's idle limit without a
// call, and with the server (Close; a server killed outright takes its
// launchers, and so the commands, with it).

// Bounds of the session parameters.
var (
	sessionTimeoutMs = intParam{"timeoutMs", 600000, 1, 3600000}
	execYieldMs      = intParam{"yieldMs", 0, 0, 30000}
	sessionYieldMs   = intParam{"yieldMs", 1000, 0, 30000}
	ttyRows          = intParam{"rows", 24, 1, 500}
	ttyCols          = intParam{"cols", 80, 1, 1000}
)

// maxInputBytes bounds one write's input.
const maxInputBytes = 64 << 10

// sessionEnd is how a session's command ended, as its final answer says: the
// exit fields of the result, with the note of a kill or a spawn error in
// Stderr, which starts the final answer's stderr.
type sessionEnd struct {
	out   *ExecOutput
	isErr bool // the answer is a tool error (a kill nobody asked for, a command that did not start)
}

// validateSession checks the session parameters of an exec_command call.
func (c *execCall) validateSession(in *ExecInput) error {
	if in.YieldMs != nil {
		y, err := bounded(execYieldMs, in.YieldMs)
		if err != nil {
			return err
		}
		d := time.Duration(y) * time.Millisecond
		c.yield = &d
	}
	c.tty = in.TTY
	if c.tty && c.yield == nil {
		return fmt.Errorf("%w: tty needs yieldMs: a terminal is for a session (give yieldMs, e.g. 1000, and drive it with exec_session)", policy.ErrInvalid)
	}
	if !c.tty && (in.Rows != nil || in.Cols != nil) {
		return fmt.Errorf("%w: rows and cols are the size of a terminal: they need tty: true", policy.ErrInvalid)
	}
	var err error
	if c.rows, err = bounded(ttyRows, in.Rows); err != nil {
		return err
	}
	c.cols, err = bounded(ttyCols, in.Cols)
	return err
}

// boundedTimeout is timeoutMs as validated: a session may run up to an hour.
func (c *execCall) boundedTimeout(v *int) (int, error) {
	if c.yield != nil {
		return bounded(sessionTimeoutMs, v)
	}
	ms, err := bounded(execTimeoutMs, v)
	if err != nil && v != nil && *v > 0 && int64(*v) <= sessionTimeoutMs.max {
		return 0, fmt.Errorf("%w (with yieldMs, a session may run up to %d)", err, sessionTimeoutMs.max)
	}
	return ms, err
}

// sessionIO is what a session's command reads and writes: pipes, or a terminal.
type sessionIO struct {
	tty bool
	// The supervisor's ends: input, and the outputs to read (on a terminal its
	// master, all three).
	stdin, stdout, stderr *os.File
	// The command's ends, closed once it has them.
	childIn, childOut, childErr *os.File
	slavePath                   string // the terminal's slave, /dev/pts/N
}

// openSessionIO makes a session's pipes, or its terminal of rows x cols.
func openSessionIO(c *execCall) (*sessionIO, error) {
	io := &sessionIO{tty: c.tty}
	if c.tty {
		master, slave, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
		}
		if err := pty.Setsize(master, &pty.Winsize{Rows: uint16(c.rows), Cols: uint16(c.cols)}); err != nil {
			master.Close()
			slave.Close()
			return nil, fmt.Errorf("sizing the pseudo-terminal: %w", err)
		}
		// The library's ioctls put the master in blocking mode; a copy in
		// non-blocking mode goes to Go's poller, so reads end when it is
		// closed and writes take deadlines.
		m, err := pollable(master)
		if err != nil {
			slave.Close()
			return nil, err
		}
		io.stdin, io.stdout = m, m
		io.childIn, io.childOut, io.childErr = slave, slave, slave
		io.slavePath = slave.Name()
		return io, nil
	}
	var files [6]*os.File
	var err error
	for i := 0; i < 6 && err == nil; i += 2 {
		files[i], files[i+1], err = os.Pipe()
	}
	if err != nil {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
		return nil, fmt.Errorf("creating a session's pipes: %w", err)
	}
	io.childIn, io.stdin = files[0], files[1]
	io.stdout, io.childOut = files[2], files[3]
	io.stderr, io.childErr = files[4], files[5]
	return io, nil
}

// pollable replaces f, a blocking descriptor, with a non-blocking copy that Go's
// poller serves.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// closeChild closes the command's ends, once it has its own copies.
func (io *sessionIO) closeChild() {
	io.childIn.Close()
	if !io.tty {
		io.childOut.Close()
		io.childErr.Close()
	}
}

// closeAll closes everything, when the command could not be started.
func (io *sessionIO) closeAll() {
	io.closeChild()
	io.stdin.Close()
	if !io.tty {
		io.stdout.Close()
		io.stderr.Close()
	}
}

// ttyEnv is a terminal session's environment: what a terminal has instead of
// the plain-text settings every other command gets.
func ttyEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "NO_COLOR", "PAGER", "GIT_PAGER":
		case "TERM":
			out = append(out, "TERM=xterm-256color")
		default:
			out = append(out, kv)
		}
	}
	return out
}

// startSession runs an exec_command call with yieldMs as a session: it answers
// after at most yieldMs, with the ordinary result if the command has ended by
// then, else with {running: true, sessionId, ...}.
func (s *Server) startSession(ctx context.Context, in *ExecInput, c *execCall, start time.Time) (*ExecOutput, error) {
	ir, ok := s.runner.(cmdrun.InteractiveRunner)
	if !ok {
		return nil, fmt.Errorf("%w: sessions (yieldMs, tty) need the Linux launcher; run the command without them", ErrSandboxUnavailable)
	}
	slot, err := s.sessions.Reserve()
	if err != nil {
		return nil, err
	}
	sess, err := s.launchSession(ctx, ir, in, c, start, slot)
	if err != nil {
		slot.Cancel()
		return nil, err
	}
	// The call that starts a session may be cancelled while it waits for its
	// first answer: the client never learns the id, so the session ends.
	stopCancel := context.AfterFunc(ctx, func() { sess.kill(cmdrun.Reason{Kind: KilledCancelled}) })
	stopProgress := reportProgress(ctx, start, *c.yield, func() string { return lastLine(s.sessions.Latest(sess.id)) })
	a, err := s.sessions.Poll(context.Background(), sess.id, session.Wait{For: *c.yield})
	stopProgress()
	stopCancel()
	if err != nil {
		return nil, err
	}
	out, _ := sessionOutput(a, s.opts.Unsafe)
	if !a.Running {
		out.SessionID = "" // the ordinary result: the session is gone
	} else {
		out.Ports = s.portReports(a.ID) // ports.go
	}
	out.Mounts = reportMounts(c.mounts)
	return out, nil
}

// startedSession is what startSession needs of a session it launched.
type startedSession struct {
	id   string
	kill func(cmdrun.Reason)
}

// launchSession starts the command of a session as ExecCommand starts one,
// with pipes or a terminal, and opens its session in slot.
func (s *Server) launchSession(ctx context.Context, ir cmdrun.InteractiveRunner, in *ExecInput, c *execCall, start time.Time, slot *session.Reservation[sessionEnd]) (*startedSession, error) {
	// A session holds its workspaces for its life: their sync is refused
	// meanwhile, naming it.
	leave, err := s.enter(ctx, c.mounts, store.User{Who: "session " + slot.ID() + " (" + displayCommand(in.Command) + ")", Session: true})
	if err != nil {
		return nil, err
	}
	scratch, err := s.scratch.take()
	if err != nil {
		leave()
		return nil, err
	}
	cleanup := func() {
		s.scratch.release(scratch)
		leave()
	}
	io, err := openSessionIO(c)
	if err != nil {
		cleanup()
		return nil, err
	}
	cwd := c.cwd
	if cwd == "" {
		cwd = scratch
	}
	env := commandEnv(scratch)
	sb := commandPolicy(c.mounts, scratch, c.net)
	sb.ReadWrite = append(sb.ReadWrite, c.caches.dirs...)
	env = overlayEnv(env, c.caches.env)
	if io.tty {
		env = ttyEnv(env)
		// The terminal's own node, so that the command finds its name (tty,
		// ttyname) and may open it again; nothing else of /dev/pts.
		sb.Devices = append(append([]string(nil), sb.Devices...), io.slavePath)
	}
	if err := placeMounts(&sb, c.mounts, c.placing); err != nil { // places.go
		io.closeAll()
		cleanup()
		return nil, err
	}
	cmd := &policy.Command{Argv: c.argv, Dir: cwd, Env: overlayEnv(env, c.env), Sandbox: sb, Unsafe: s.opts.Unsafe, Limits: c.limits.command()}
	// The proxy's part of a call with allowHosts lives as long as the session,
	// not as the call that started it.
	life, endLife := context.WithCancel(context.Background())
	pc, err := s.proxyCall(life, c, cmd)
	if err != nil {
		endLife()
		io.closeAll()
		cleanup()
		return nil, err
	}
	cleanup = func() {
		endLife()
		s.scratch.release(scratch)
		leave()
	}
	ports, err := s.portsFor(c, cmd, pc, true) // ports.go
	if err != nil {
		if pc != nil {
			pc.Close()
		}
		io.closeAll()
		cleanup()
		return nil, err
	}
	closeProxy := func() {
		ports.close()
		if pc != nil {
			pc.Close()
		}
	}
	tree, err := ir.StartInteractive(cmd, int64(c.memoryMb)<<20, io.childOut, io.childErr, &jail.Interactive{Stdin: io.childIn, Terminal: io.tty})
	if err != nil {
		closeProxy()
		io.closeAll()
		cleanup()
		return nil, runnerRefusal(err)
	}
	io.closeChild()
	forget, err := s.track(tree)
	if err != nil {
		closeProxy()
		io.closeAll()
		tree.Kill()
		cleanup()
		return nil, err
	}
	run := cmdrun.Enforce(tree, c.runLimits())
	spec := &session.Spec[sessionEnd]{
		Command:  displayCommand(in.Command),
		Terminal: io.tty,
		Stdin:    io.stdin, Stdout: io.stdout, Stderr: io.stderr,
		Wait: func() sessionEnd {
			end := run.Wait()
			forget()
			defer cleanup()
			defer closeProxy()
			out := &ExecOutput{Unsandboxed: s.opts.Unsafe, Usage: usageOf(end.Usage), Isolation: cmdrun.Isolation(tree)}
			ports.note(out)
			out, err := c.ended(out, tree, end, scratch, pc)
			if err != nil {
				return sessionEnd{out: &ExecOutput{Stderr: err.Error() + "\n", Error: err.Error()}, isErr: true}
			}
			requested := end.KilledBy == cmdrun.Reason{Kind: KilledSession, Text: session.ClosedNote}
			return sessionEnd{out: out, isErr: out.ExitCode == nil || out.Killed && !requested}
		},
		Signal: func(sig string) error { return signalSession(tree, io, sig) },
		End:    func(note string) { run.Kill(cmdrun.Reason{Kind: KilledSession, Text: note}) },
	}
	sess := slot.Open(spec, start)
	ports.named(sess.ID(), s.sessions)
	return &startedSession{id: sess.ID(), kill: run.Kill}, nil
}

// signalSession sends sig (INT, TERM or KILL) to a session's command. On a
// terminal, INT goes as Ctrl-C does: to the terminal's foreground process group
// (the job a shell runs), by the kernel (TIOCSIG on the master); TERM and KILL,
// and everything on pipes, go to the command's process group, by its launcher.
func signalSession(t cmdrun.SignalTree, io *sessionIO, sig string) error {
	if io.tty && sig == "INT" {
		rc, err := io.stdin.SyscallConn()
		if err != nil {
			return err
		}
		var ioErr error
		if err := rc.Control(func(fd uintptr) { ioErr = unix.IoctlSetInt(int(fd), unix.TIOCSIG, int(unix.SIGINT)) }); err != nil {
			return err
		}
		if ioErr == nil || !errors.Is(ioErr, unix.EINVAL) {
			return ioErr
		}
		// A kernel without TIOCSIG: the command's group, as on pipes.
	}
	return t.Signal("SIG" + sig)
}

// displayCommand is a command line as list shows it.
func displayCommand(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}~#") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		b.WriteString(a)
		if b.Len() > 200 {
			break
		}
	}
	out := b.String()
	if len(out) > 200 {
		out = strings.ToValidUTF8(out[:199], "") + "…"
	}
	return out
}

// sessionOutput is the result object of a session's answer, and whether it is
// a tool error.
func sessionOutput(a *session.Answer[sessionEnd], unsafe bool) (*ExecOutput, bool) {
	out := &ExecOutput{
		Stdout: a.Stdout, Stderr: a.Stderr,
		StdoutDropped: a.StdoutDropped, StderrDropped: a.StderrDropped,
		StdoutTruncated: a.StdoutDropped > 0, StderrTruncated: a.StderrDropped > 0,
		DurationMs:  float64(a.Elapsed.Microseconds()) / 1000,
		Unsandboxed: unsafe,
		Matched:     a.Matched,
	}
	isErr := false
	if a.Running {
		out.Running, out.SessionID = true, a.ID
	} else {
		end := a.End.out
		out.ExitCode, out.Killed, out.KilledBy, out.Signal, out.Error = end.ExitCode, end.Killed, end.KilledBy, end.Signal, end.Error
		out.Usage, out.Network, out.MountPaths = end.Usage, end.Network, end.MountPaths
		out.Stderr = end.Stderr + out.Stderr
		out.SessionID = a.ID
		isErr = a.End.isErr
	}
	out.StdoutEncoding, out.StderrEncoding = textEncoding(out.Stdout), textEncoding(out.Stderr)
	return out, isErr
}

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/exactjson"
	"github.com/autobox-dev/autobox/mcpstdio"
	"github.com/autobox-dev/autobox/session"
	"github.com/autobox-dev/autobox/store"
	"github.com/autobox-dev/autobox/supervisor"
)

// The session server (see session.go): one per state dir, kept single by a
// lock file it holds while it runs, which names its pid and the abstract
// socket it listens on (see sessionpeer_linux.go for why abstract), started by
// the first `exec --yield` that finds none. Each connection carries one call: a request
// line, then a reply line; a connection that closes before its reply cancels
// the call (a session being started ends).
//
//	autobox exec --yield          session server (autobox session serve)
//	  read sessions.lock, connect @name,
//	  check the peer's pid and uid ─ fails ─▶ (start it: setsid, stdin/out
//	                                    /dev/null, stderr sessions.log, ready
//	                                    pipe as fd 3)
//	                         ◀── "ok" on the ready pipe, once it listens
//	  {"tool", "arguments"} ───────▶ the tool's method, as an MCP call runs it
//	                         ◀── {"result"} or {"error"}
//	                              (a peer of another uid, or one that runs
//	                              sandboxed, gets {"error"} and nothing else)

const (
	// sessionLinger is how long a session server with no session waits for one
	// before it exits (it starts with none: the call that started it comes next).
	sessionLinger = 5 * time.Second
	// maxSessionLine bounds a request line, as the MCP server bounds one.
	maxSessionLine = mcpstdio.MaxMessageBytes
)

// sessionFiles are the session server's files in the state dir.
type sessionFiles struct{ dir, lock, log string }

func sessionFilesOf() (sessionFiles, error) {
	st, err := store.Open(store.Options{})
	if err != nil {
		return sessionFiles{}, err
	}
	dir := st.StateDir()
	return sessionFiles{dir: dir, lock: filepath.Join(dir, "sessions.lock"), log: filepath.Join(dir, "sessions.log")}, nil
}

// sessionCall makes one call to the session server, starting one for
// exec_command if none runs. in is the tool's input object.
func (e *env) sessionCall(tool string, in any) (*supervisor.SessionOutput, error) {
	args, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	f, err := sessionFilesOf()
	if err != nil {
		return nil, err
	}
	conn, err := dialSession(f)
	if errors.Is(err, errNoServer) {
		if tool != "exec_command" {
			return noSessionServer(in, f)
		}
		conn, err = startSessionServer(f)
	}
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Interrupted, this process closes the connection: the server cancels the
	// call (and ends a session the call was starting).
	stop := context.AfterFunc(e.ctx, func() { conn.Close() })
	defer stop()
	draw, drawn := e.progressDrawer(map[string]string{"exec_command": "exec", "exec_session": "session"}[tool])
	defer drawn()
	line, _ := json.Marshal(sessionRequest{Tool: tool, Arguments: args, Progress: draw != nil})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("talking to the session server: %w", err)
	}
	var reply sessionReply
	for dec := json.NewDecoder(conn); ; {
		reply = sessionReply{}
		if err := dec.Decode(&reply); err != nil {
			if e.ctx.Err() != nil {
				return nil, e.ctx.Err()
			}
			return nil, fmt.Errorf("the session server did not answer (see %s): %w", f.log, err)
		}
		if reply.Progress == nil || reply.Result != nil || reply.Error != "" {
			break
		}
		if draw != nil {
			draw(*reply.Progress)
		}
	}
	if reply.Error != "" {
		return nil, errors.New(reply.Error)
	}
	if reply.Result == nil {
		return nil, errors.New("the session server answered with nothing")
	}
	return reply.Result, nil
}

// noSessionServer answers a call about sessions when no server runs: no
// session is open.
func noSessionServer(in any, f sessionFiles) (*supervisor.SessionOutput, error) {
	si, _ := in.(*supervisor.SessionInput)
	if si != nil && si.Action == "list" {
		return &supervisor.SessionOutput{Sessions: &[]supervisor.SessionInfo{}}, nil
	}
	id := ""
	if si != nil {
		id = si.SessionID
	}
	return nil, fmt.Errorf("%w %q: no session server runs for %s, so no session is open (a session ends with the server that ran it; an MCP server's sessions are its own)", session.ErrUnknown, id, f.dir)
}

// startSessionServer starts a session server and connects to it. Another
// process may be starting one at the same moment: the one that gets the lock
// serves, and both connect to it.
func startSessionServer(f sessionFiles) (*net.UnixConn, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the autobox binary: %w", err)
	}
	logf, err := os.OpenFile(f.log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the session server's log: %w", err)
	}
	defer logf.Close()
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(self, "session", "serve", "--ready-fd", "3")
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{readyW}
	// Its own session: this terminal's Ctrl-C and hang-up are not for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the session server: %w", err)
	}
	go cmd.Wait() // reaped if it exits while this process lives; else init's
	_ = readyR.SetReadDeadline(time.Now().Add(30 * time.Second))
	msg, _ := io.ReadAll(io.LimitReader(readyR, 4096))
	if s := strings.TrimSpace(string(msg)); s != "ok" && s != "running" {
		if s == "" {
			s = "it exited without saying why"
		}
		return nil, fmt.Errorf("the session server did not start (see %s): %s", f.log, s)
	}
	// "running": another one holds the lock and is about to listen, if it does
	// not already.
	var conn *net.UnixConn
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err = dialSession(f); !errors.Is(err, errNoServer) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to the session server: %w", err)
	}
	return conn, nil
}

// serveSessions is `autobox session serve`: the session server, in the
// foreground, until it has had no session for sessionLinger (or a signal).
func (e *env) serveSessions(readyFD int) int {
	ready := func(msg string) {}
	if readyFD > 0 {
		r := os.NewFile(uintptr(readyFD), "ready")
		ready = func(msg string) {
			fmt.Fprintln(r, msg)
			r.Close()
		}
	}
	fail := func(err error) int {
		ready(err.Error())
		return e.fail("session serve", err)
	}
	f, err := sessionFilesOf()
	if err != nil {
		return fail(err)
	}
	lock, err := os.OpenFile(f.lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fail(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		ready("running")
		fmt.Fprintf(e.stderr, "autobox session serve: a session server already runs for %s\n", f.dir)
		return ExitRefused
	}
	s, err := e.server(-1) // no JS worker: it runs commands only
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	name, err := newSessionName()
	if err != nil {
		return fail(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		return fail(fmt.Errorf("listening on the abstract unix socket @%s: %w", name, err))
	}
	if err := writeSessionAddr(lock, sessionAddr{pid: os.Getpid(), name: name}); err != nil {
		l.Close()
		return fail(fmt.Errorf("recording the session server's address in %s: %w", f.lock, err))
	}
	defer lock.Truncate(0)
	self, _ := os.Executable()
	ready("ok")
	srv := &sessionServer{s: s, uid: os.Getuid(), self: self, last: time.Now()}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go func() {
		srv.idleWatch(ctx)
		l.Close()
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			break
		}
		srv.track(1)
		go func() {
			defer srv.track(-1)
			srv.handle(ctx, conn.(*net.UnixConn))
		}()
	}
	srv.wg.Wait()
	return ExitOK
}

// sessionServer serves the calls of a session server.
type sessionServer struct {
	s    *supervisor.Server
	uid  int
	self string // this binary, to know its sandbox roles in a peer's ancestry
	wg   sync.WaitGroup

	mu     sync.Mutex
	active int       // calls in progress
	last   time.Time // when the server last had a call or a session
}

func (v *sessionServer) track(d int) {
	if d > 0 {
		v.wg.Add(1)
	} else {
		defer v.wg.Done()
	}
	v.mu.Lock()
	v.active += d
	v.last = time.Now()
	v.mu.Unlock()
}

// idleWatch returns once the server has had no call and no session for
// sessionLinger, or ctx is done.
func (v *sessionServer) idleWatch(ctx context.Context) {
	tick := time.NewTicker(sessionLinger / 10)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, _, _ := v.s.ExecSession(ctx, &supervisor.SessionInput{Action: "list"})
		v.mu.Lock()
		if v.active > 0 || list != nil && list.Sessions != nil && len(*list.Sessions) > 0 {
			v.last = time.Now()
		}
		quiet := time.Since(v.last)
		v.mu.Unlock()
		if quiet >= sessionLinger {
			return
		}
	}
}

// handle answers the one call of a connection from this server's user.
func (v *sessionServer) handle(ctx context.Context, conn *net.UnixConn) {
	defer conn.Close()
	if err := v.checkPeer(conn); err != nil {
		writeReply(conn, sessionReply{Error: err.Error()})
		return
	}
	r := bufio.NewReaderSize(io.LimitReader(conn, maxSessionLine+1), 64<<10)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var req sessionRequest
	if err := exactjson.Decode(line, &req); err != nil {
		writeReply(conn, sessionReply{Error: fmt.Sprintf("a malformed request: %v", err)})
		return
	}
	// The client sends nothing more: a read that returns means it has gone.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = r.ReadByte()
		cancel()
	}()
	if req.Progress {
		ctx = supervisor.WithProgress(ctx, func(p supervisor.Progress) { writeReply(conn, sessionReply{Progress: &p}) })
	}
	out, err := v.call(ctx, &req)
	if err != nil {
		writeReply(conn, sessionReply{Error: err.Error()})
		return
	}
	writeReply(conn, sessionReply{Result: out})
}

func (v *sessionServer) call(ctx context.Context, req *sessionRequest) (*supervisor.SessionOutput, error) {
	switch req.Tool {
	case "exec_command":
		var in supervisor.ExecInput
		if err := supervisor.DecodeArgs(req.Tool, req.Arguments, &in); err != nil {
			return nil, err
		}
		if in.YieldMs == nil && !supervisor.NamesSessionPort(in.AllowHosts) {
			return nil, errors.New("the session server runs sessions, and calls that reach their ports: give yieldMs")
		}
		out, err := v.s.ExecCommand(ctx, &in)
		if err != nil {
			return nil, err
		}
		return &supervisor.SessionOutput{ExecOutput: *out}, nil
	case "exec_session":
		var in supervisor.SessionInput
		if err := supervisor.DecodeArgs(req.Tool, req.Arguments, &in); err != nil {
			return nil, err
		}
		out, _, err := v.s.ExecSession(ctx, &in)
		return out, err
	}
	return nil, fmt.Errorf("unknown tool %q: the session server takes exec_command and exec_session", req.Tool)
}

// checkPeer refuses a connection from another user, and from any process
// that runs under an autobox sandbox (see sessionpeer_linux.go).
func (v *sessionServer) checkPeer(conn *net.UnixConn) error {
	cred, err := peerCred(conn)
	if err != nil {
		return err
	}
	if int(cred.Uid) != v.uid {
		return fmt.Errorf("the session server serves uid %d only", v.uid)
	}
	if why := sandboxedPeer(int(cred.Pid), v.self); why != "" {
		return fmt.Errorf("the session server refuses sandboxed processes: %s", why)
	}
	return nil
}

func writeReply(conn net.Conn, r sessionReply) {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(sessionReply{Error: err.Error()})
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write(append(b, '\n'))
}

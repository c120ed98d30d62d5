// Package supervisor is the autobox MCP server: it declares the tools, validates every
// call, runs execute_js in the JS worker pool (package jspool), runs sandboxed
// commands and the workspace store. One Server serves one MCP session and
// the command line alike.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/jspool"
	"github.com/autobox-dev/autobox/mcpstdio"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/session"
	"github.com/autobox-dev/autobox/store"
)

// Version is the autobox version, set at build time with -ldflags.
var Version = "dev"

// Options configures a Server. The zero value is usable.
type Options struct {
	// PoolSize is the number of warm JS workers kept ready; 0 means 2, negative means
	// none (each execute_js call starts its own worker: for one-shot command lines;
	// the pool itself is made by the first execute_js call).
	PoolSize int
	// Launchers is the number of command launchers kept ready once a command has
	// come; 0 means 2, negative is for a command line that runs one command: its
	// launcher is started with the server, none is kept after it (each later
	// command starts its own). With PoolSize negative too, the server starts
	// nothing else until a call needs it.
	Launchers int
	// Exe is the autobox binary used for workers and sandboxed commands; "" means
	// os.Executable().
	Exe string
	// Unsafe lets exec_command run without an OS sandbox on a host that has none.
	// It is loud: the server says so at start-up and in every result.
	Unsafe bool
	// StateDir holds workspace records and the operation lock; "" means
	// $AUTOBOX_STATE_DIR, else the platform default (see package store).
	StateDir string
	// Throughput tunes JS workers for command lines and batch runs, whose calls
	// arrive as soon as a worker exists and where a worker's CPU time counts more
	// than one call's latency: workers skip the warm-up call that has the first real
	// call run on warm code paths, and sleep with a coarse timer slack (see
	// workerTimerSlack), so a JS timer may fire up to 2 ms late.
	Throughput bool
	// Log receives diagnostics (stderr in the binary); nil discards them.
	Log *slog.Logger
	// AllowHosts is the server's host allowlist (--allow-host): every call's
	// default and ceiling (see networkChoice). Empty: calls choose freely.
	AllowHosts []string
	// MaxSessions is how many exec_command sessions (yieldMs) may be open at
	// once; 0 means session.DefaultMax (16).
	MaxSessions int
	// SessionIdle ends a session that no call has named for this long; 0 means
	// session.DefaultIdle (10 minutes).
	SessionIdle time.Duration
	// Ceiling is the user's ceiling: the file (Ceiling.File, or the default
	// file) and the flags of `autobox serve`; nil reads the default file alone.
	Ceiling *ceiling.Flags
	// AskTimeout is how long the user has to answer a question about a call
	// beyond the ceiling; 0 means DefaultAskTimeout.
	AskTimeout time.Duration
	// MaxQuestions is how many questions the server puts to the user in any
	// minute at most (and ten times that in any hour), all calls together;
	// 0 means DefaultMaxQuestions (askrate.go).
	MaxQuestions int

	// noDirect passes every request to the SDK (see mcpstdio.Direct): tests set it to
	// compare the two paths.
	noDirect bool
	// noWorkerJail starts JS workers unjailed: only this package's tests set it, as
	// the positive control of the jail tests.
	noWorkerJail bool
}

// Server holds everything a session needs. Methods are safe for concurrent use.
type Server struct {
	opts    Options
	exe     string
	log     *slog.Logger
	js      *jsPool // the JS workers' pool (jsworkers.go)
	runner  cmdrun.Runner
	store   *store.Store
	scratch *scratchDirs
	// defaultHosts is Options.AllowHosts, parsed.
	defaultHosts policy.AllowHosts
	// proxy serves proxied calls; started by the first (proxyFor).
	proxyOnce sync.Once
	proxy     *proxy.Proxy
	proxyErr  error

	sessions *session.Table[sessionEnd] // exec_command calls with yieldMs that outlive their answer
	sports   sessionPorts               // their ports, reached from later calls and the host (ports.go)

	ceiling   *ceiling.Live  // the user's ceiling (ceiling.go), following its file
	grants    ceiling.Grants // what the user allowed beyond it for this server's life
	questions questions      // asking the user (ask.go)
	rounds    *roundTrips    // asking 2026-07-28 clients (roundtrip.go)
	endLife   context.CancelFunc

	mu       sync.Mutex
	trees    map[cmdrun.Tree]bool // running exec_command trees, killed by Close
	inflight sync.WaitGroup
	closed   bool
}

// New starts a server: it resolves its own binary and starts the worker pool.
func New(opts Options) (s *Server, err error) {
	s = &Server{opts: opts, log: opts.Log}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	exe := opts.Exe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the autobox binary: %w", err)
		}
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, fmt.Errorf("finding the autobox binary: %w", err)
	}
	s.exe = exe
	if s.defaultHosts, err = policy.ParseAllowHosts("--allow-host", opts.AllowHosts); err != nil {
		return nil, err
	}
	// First: a server of one command starts that command's launcher here, to
	// get ready while the rest of the server does (cmdrun.NewRunner).
	launchers := kept(opts.Launchers)
	if opts.Launchers < 0 {
		launchers = -1
	}
	runner := cmdrun.NewRunner(exe, opts.Unsafe, launchers)
	s.runner = runner
	defer func() {
		if err != nil { // s is nil by now
			runner.Close()
		}
	}()
	if s.store, err = store.Open(storeOptions(opts.StateDir)); err != nil {
		return nil, fmt.Errorf("opening the workspace store: %w", err)
	}
	if s.ceiling, err = ceiling.NewLive(opts.Ceiling, []string{s.store.StateDir()}, s.log); err != nil {
		return nil, err
	}
	s.questions.turn = make(chan struct{}, 1)
	life, endLife := context.WithCancel(context.Background())
	s.endLife = endLife
	s.rounds = newRoundTrips(life, s.askTimeout())
	s.js = onceJSPool(jspool.Options{Exe: exe, Size: kept(opts.PoolSize), Throughput: opts.Throughput, Unjailed: opts.noWorkerJail, Log: s.log})
	if opts.PoolSize >= 0 {
		// Workers kept warm are started now; with none kept (a command
		// line) the pool is made by the first execute_js call, if one comes.
		if _, err = s.js.get(); err != nil {
			return nil, err
		}
	}
	s.scratch = newScratchDirs()
	s.sessions = session.NewTable[sessionEnd](&session.Options{Max: opts.MaxSessions, Idle: opts.SessionIdle})
	if opts.Unsafe {
		s.log.Warn("UNSAFE: --unsafe-no-sandbox given: exec_command runs WITHOUT an OS sandbox when the host cannot enforce one")
	}
	if noLimits {
		s.log.Warn("a benchmark build (autobox_bench_nolimits): maxProcesses, maxWriteMb and cpuMs are NOT enforced")
	}
	return s, nil
}

// kept is how many processes a pool keeps ready for the PoolSize or Launchers
// of Options: 0 means 2, negative none.
func kept(n int) int {
	switch {
	case n == 0:
		return 2
	case n < 0:
		return 0
	}
	return n
}

// Close ends every running command tree and worker, waits (briefly) for in-flight
// calls to clean up their scratch dirs, and stops the pool. In-flight calls fail.
func (s *Server) Close() {
	s.endLife()
	s.sessions.CloseAll("killed: the server is shutting down", 5*time.Second)
	// The trees are killed side by side and outside s.mu: a Kill waits for its
	// tree to go (up to about a second), and calls ending meanwhile forget theirs.
	s.mu.Lock()
	s.closed = true
	trees := slices.Collect(maps.Keys(s.trees))
	s.mu.Unlock()
	var kills sync.WaitGroup
	for _, t := range trees {
		kills.Go(t.Kill)
	}
	kills.Wait()
	s.js.close()
	s.runner.Close()
	s.proxyOnce.Do(func() { s.proxyErr = errors.New("the server is closing") })
	if s.proxy != nil {
		s.proxy.Close()
	}
	s.sports.close()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.log.Warn("calls still running 5s after shutdown began")
	}
	s.scratch.close()
}

// track registers a running tree so Close can end it; the returned func forgets it.
// It fails once the server is closing.
func (s *Server) track(t cmdrun.Tree) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		t.Kill()
		return nil, errShuttingDown
	}
	if s.trees == nil {
		s.trees = map[cmdrun.Tree]bool{}
	}
	s.trees[t] = true
	return func() {
		s.mu.Lock()
		delete(s.trees, t)
		s.mu.Unlock()
	}, nil
}

// implementation is the serverInfo of the MCP server.
var implementation = &mcp.Implementation{Name: "autobox", Version: Version}

// MCPServer builds the MCP server with autobox's tools.
func (s *Server) MCPServer() *mcp.Server {
	srv, _ := s.mcpServer()
	return srv
}

// mcpServer builds the MCP server and returns its tools' call functions by name too.
func (s *Server) mcpServer() (*mcp.Server, map[string]toolCall) {
	calls := map[string]toolCall{}
	srv := mcp.NewServer(implementation, &mcp.ServerOptions{
		Instructions: "autobox runs JavaScript (execute_js) and shell commands (exec_command) in a sandbox. Every call carries its own permissions: mounts, network, time and memory. Anything not allowed is denied. A command given yieldMs becomes a session that outlives the call (a dev server, a REPL, a prompt to answer): exec_session polls, writes to, signals and closes it.",
	})
	f := false
	t := true
	addTool(s, srv, calls, &mcp.Tool{
		Name:        "execute_js",
		Description: "Run JavaScript in a fresh V8 isolate: a bare expression or statements with return; await allowed. No Node APIs. host.readFile/writeFile/listDir reach declared mounts only; fetch/net exist only with allowNetwork. Returns {ok, result, error, logs, durationMs, readBytes, writeBytes}.",
		Annotations: &mcp.ToolAnnotations{Title: "Run JavaScript in a sandbox", ReadOnlyHint: false, DestructiveHint: &f, IdempotentHint: false, OpenWorldHint: &t},
	}, s.jsTool, jsFailed)
	addTool(s, srv, calls, &mcp.Tool{
		Name:        "exec_command",
		Description: "Run a command (argv array) under the OS sandbox: reads limited to system directories and declared mounts, writes only to rw mounts and a per-call scratch dir ($HOME/$TMPDIR), no network unless allowNetwork, whole process tree killed at timeoutMs, RSS watchdog at memoryMb. Sandbox paths (/mnt/...) in arguments are rewritten to host paths. Returns {stdout, stderr, exitCode, killed, durationMs}. With yieldMs it answers after at most that long, and a command still running goes on as a session ({running: true, sessionId}; timeoutMs up to 1 hour; tty for a terminal), driven with exec_session.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a command in a sandbox", DestructiveHint: &t, OpenWorldHint: &t},
	}, s.execTool, execFailed)
	addTool(s, srv, calls, &mcp.Tool{
		Name:        "exec_session",
		Description: "Drive a command that exec_command started with yieldMs (a session), still running in its sandbox: poll for its output since the last answer (waiting up to yieldMs), write input to its stdin (then poll), signal it (INT, TERM, KILL; then poll), close it (kill the whole tree; the final result), or list the open sessions. Answers are exec_command's result: {running: true, sessionId, stdout, stderr, durationMs} while it runs, then once its final result with exitCode; stdoutDropped/stderrDropped count output not read in time. Sessions end at their timeoutMs, on close, after the server's idle limit (10 minutes) without a call, and with the server; at most 16 at once.",
		Annotations: &mcp.ToolAnnotations{Title: "Drive a running command", DestructiveHint: &t, OpenWorldHint: &t},
	}, s.ExecSession, sessionFailed)
	addTool(s, srv, calls, &mcp.Tool{
		Name:        "copy_then_sync",
		Description: "Persistent writable copies of a host directory. create: copy hostPath into a workspace (copy-on-write) and return {workspaceId}; mount it in execute_js or exec_command with {workspaceId}; status: preview changes and conflicts (diff: true adds a unified diff); sync: apply workspace changes to the host (conflicts abort with nothing applied; paths applies only those); resolve (paths): after bringing the host's version of conflicted paths into the workspace, take it as their baseline; merge (paths): three-way merge of conflicted text files into the workspace; discard: delete the workspace. The host source is unchanged until sync.",
		Annotations: &mcp.ToolAnnotations{Title: "Workspace copy and sync", DestructiveHint: &t, OpenWorldHint: &f},
	}, s.workspaceTool, workspaceFailed)
	return srv, calls
}

// Serve runs one MCP session over t until the client disconnects or ctx ends. Over an
// mcpstdio.Transport, tool calls take the transport's direct path (directCalls).
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	srv, calls := s.mcpServer()
	st, ok := t.(*mcpstdio.Transport)
	if !ok {
		return srv.Run(ctx, t)
	}
	var session atomic.Pointer[mcp.ServerSession]
	if !s.opts.noDirect {
		st.Direct = &directCalls{s: s, tools: calls, session: &session}
	}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	session.Store(ss)
	s.questions.lenders.Store(ss, st)
	defer s.questions.lenders.Delete(ss)
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		return ctx.Err()
	case err := <-ended:
		return err
	}
}

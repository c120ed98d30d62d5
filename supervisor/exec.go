package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/store"
)

// Argument bounds for exec_command.
const (
	maxArgs     = 4096
	maxArgBytes = 1 << 20
)

// ExecInput is the exec_command argument object. The tags are the descriptions in
// the tool's input schema, which toolSchemas completes with defaults and bounds.
type ExecInput struct {
	Command      []string           `json:"command" jsonschema:"argument vector, e.g. [\"ls\", \"-la\", \"/mnt/data\"]; mounts are seen at their sandboxPath (/mnt/...); where the command has no root of its own (see mountPaths) sandbox paths in arguments, --flag= values and bash -c text are rewritten to host paths"`
	TimeoutMs    *int               `json:"timeoutMs,omitempty" jsonschema:"wall-clock limit in ms; the whole process tree is killed"`
	MemoryMb     *int               `json:"memoryMb,omitempty" jsonschema:"RSS cap of the whole process tree in MB"`
	AllowNetwork bool               `json:"allowNetwork,omitempty" jsonschema:"allow the whole network; without it (and without allowHosts) no socket can be created"`
	AllowHosts   []string           `json:"allowHosts,omitempty" jsonschema:"reach only these hosts, through autobox's proxy (HTTP_PROXY and ALL_PROXY are set): example.com (ports 80 and 443), *.example.com (subdomains), example.com:8443, localhost:5432, 10.1.2.0/24:5432, [2001:db8::1]:443; not with allowNetwork. localhost:PORT also puts the host's PORT at this command's own localhost:PORT (for psql, raw sockets, clients that ignore the proxy). session:SESSION_ID:PORT puts a running session's port (a dev server) at this command's own localhost:PORT, and opens nothing else"`
	Mounts       []policy.MountSpec `json:"mounts,omitempty" jsonschema:"host directories {hostPath, sandboxPath, mode} or workspaces {workspaceId}"`
	Cwd          string             `json:"cwd,omitempty" jsonschema:"working directory (sandbox or host path) inside a declared mount; default: the per-call scratch dir"`
	MaxProcesses *int               `json:"maxProcesses,omitempty" jsonschema:"processes and threads alive at once in the tree; a fork past it fails with EAGAIN, and a call whose forks keep being refused is killed"`
	MaxWriteMb   *int               `json:"maxWriteMb,omitempty" jsonschema:"MB the tree may write to files (rw mounts, workspaces, scratch); a single file past it gets EFBIG, all of them together past it kill the call"`
	CpuMs        *int               `json:"cpuMs,omitempty" jsonschema:"CPU time of the whole tree in ms; 0: no CPU limit, only the wall-clock one"`
	MaxOpenFiles *int               `json:"maxOpenFiles,omitempty" jsonschema:"open files per process (RLIMIT_NOFILE)"`
	YieldMs      *int               `json:"yieldMs,omitempty" jsonschema:"make the call a session: answer after at most this long; if the command is still running the answer is {running: true, sessionId, stdout, stderr, durationMs} and it runs on (drive it with exec_session), with this call's mounts, network, limits and timeoutMs for its whole life. Absent: run to the end"`
	TTY          bool               `json:"tty,omitempty" jsonschema:"run the command on a pseudo-terminal (isatty is true; stdout and stderr arrive together as stdout, with the terminal's bytes); with yieldMs, write control keys such as \\u0003 (Ctrl-C)"`
	Rows         *int               `json:"rows,omitempty" jsonschema:"tty: the terminal's height in lines"`
	Cols         *int               `json:"cols,omitempty" jsonschema:"tty: the terminal's width in columns"`
	Caches       []string           `json:"caches,omitempty" jsonschema:"tool caches kept between calls, mounted read-write and set through the tool's variables: npm (npm_config_cache), pip (PIP_CACHE_DIR), go (GOCACHE, GOMODCACHE), cargo (CARGO_HOME); the user's own, outside every mount"`
	Expose       []int              `json:"expose,omitempty" jsonschema:"with yieldMs: ports the session's server listens on (inside its sandbox) to forward to the host's 127.0.0.1 for the user's browser; the answers report ports[{port, url}]; closed when the session ends"`
	Env          EnvList            `json:"env,omitempty" jsonschema:"environment variables for the command, each NAME=VALUE, added to or replacing its defaults, e.g. [\"CI=1\", \"NODE_ENV=test\", \"PATH=/usr/local/go/bin:$PATH\"], or the same as an object {\"CI\": \"1\", \"NODE_ENV\": \"test\"} ($PATH in PATH is the default PATH); HOME, TMPDIR, the proxy variables and AUTOBOX_* cannot be set"`
}

// ExecOutput is the exec_command result.
type ExecOutput struct {
	Stdout          string        `json:"stdout" jsonschema:"the command's standard output, at most 256 KB"`
	Stderr          string        `json:"stderr" jsonschema:"the command's standard error, at most 64 KB; after a kill it starts with the reason, after a refusal or spawn failure it is the reason"`
	ExitCode        *int          `json:"exitCode" jsonschema:"exit status; null when the command did not run (see error), or while a session's command runs (running: true)"`
	Killed          bool          `json:"killed" jsonschema:"the tree was killed: timeout, a limit (memory, process, disk, cpu) or cancellation (the reason starts stderr)"`
	KilledBy        KillKind      `json:"killedBy,omitempty" jsonschema:"when killed: why, as one word: timeout, cancelled, memory, processes, disk, cpu, or session (a session closed, idle, or the server shutting down)"`
	DurationMs      float64       `json:"durationMs" jsonschema:"wall-clock time of the call in ms; in a session's answers, since the command started"`
	StdoutTruncated bool          `json:"stdoutTruncated,omitempty" jsonschema:"stdout passed its limit; the rest was dropped"`
	StderrTruncated bool          `json:"stderrTruncated,omitempty" jsonschema:"stderr passed its limit; the rest was dropped"`
	Signal          string        `json:"signal,omitempty" jsonschema:"the signal that ended the command"`
	Unsandboxed     bool          `json:"unsandboxed,omitempty" jsonschema:"the command ran without an OS sandbox (the server's --unsafe-no-sandbox)"`
	Isolation       string        `json:"isolation,omitempty" jsonschema:"the sandbox the command ran in: namespaces (a root server: pid, mount, network and IPC namespaces, a private root), user-namespaces (an ordinary user's server: the same, inside a user namespace), landlock-only (no namespaces on this host: Landlock and seccomp over the host's filesystem), seatbelt (macOS)"`
	StdoutEncoding  string        `json:"stdoutEncoding,omitempty" jsonschema:"utf-8-lossy when stdout was not valid UTF-8: each invalid byte is shown as U+FFFD"`
	StderrEncoding  string        `json:"stderrEncoding,omitempty" jsonschema:"utf-8-lossy when stderr was not valid UTF-8: each invalid byte is shown as U+FFFD"`
	Error           string        `json:"error,omitempty" jsonschema:"why the command did not run: the call was refused (invalid arguments, no sandbox, unknown workspace) or the program could not be started; exitCode is null"`
	MountPaths      string        `json:"mountPaths,omitempty" jsonschema:"with mounts: 'bound at sandboxPath' (the command had a root of its own, each mount at its sandboxPath: pwd, tracebacks and files name it so) or 'rewritten to hostPath' (landlock-only, macOS: sandbox paths in command, cwd and env were replaced by host paths, which the command sees)"`
	Network         *proxy.Record `json:"network,omitempty" jsonschema:"with allowHosts: the hosts reached and the connections refused, with why"`
	Usage           Usage         `json:"usage" jsonschema:"what the whole process tree used (zero when the command did not run)"`
	Running         bool          `json:"running,omitempty" jsonschema:"a session's command is still running (exitCode is null): drive it with exec_session and sessionId"`
	SessionID       string        `json:"sessionId,omitempty" jsonschema:"the session, while running is true"`
	StdoutDropped   int64         `json:"stdoutDropped,omitempty" jsonschema:"a session's answer: bytes of stdout dropped since the last answer (not read in time, or past the final answer's limit); a note marks where"`
	StderrDropped   int64         `json:"stderrDropped,omitempty" jsonschema:"a session's answer: bytes of stderr dropped since the last answer; a note marks where"`
	Ports           []PortReport  `json:"ports,omitempty" jsonschema:"a running session's exposed ports (expose): where the host reaches each"`
	Matched         bool          `json:"matched,omitempty" jsonschema:"a session's answer: it went because a line of the output matched until"`
	Mounts          []MountReport `json:"mounts,omitempty" jsonschema:"the mounts the command ran with, each with the host directory it resolved to"`
}

// execCall is a validated exec_command call.
type execCall struct {
	argv      []string
	timeout   time.Duration
	memoryMb  int
	net       netChoice
	mounts    []policy.Mount
	cwd       string // host path (the sandbox path where placing), "" = scratch
	placing   bool   // the mounts are bound at their sandboxPath (places.go)
	timeoutMs int
	limits    treeLimits
	// A session (see session.go): yieldMs, and a terminal if tty.
	yield      *time.Duration
	tty        bool
	rows, cols int
	env        []string // the call's own variables, KEY=VALUE
	caches     callCaches
	routes     []sessionRoute        // allowHosts session:ID:PORT entries (ports.go)
	hostRoutes []policy.LoopbackPort // allowHosts localhost:PORT entries put at the command's own (hostports.go)
	expose     []int                 // a session's ports to expose to the host
	what       string                // the call in a question to the user: "this command (…)"
	clock      cmdrun.Clock          // timeoutMs
	caps       timeoutCaps           // the most timeoutMs could be, for a timeout's note (timelimit.go)
	limitCaps  limitCaps             // the most maxWriteMb and maxOpenFiles could be, for their notes (limitnotes.go)
}

func (s *Server) validateExec(in *ExecInput) (*execCall, error) {
	c := &execCall{caps: defaultCaps, limitCaps: limitCaps{writeMb: int(execMaxWriteMb.max), openFiles: int(execMaxOpenFiles.max)}}
	if len(in.Command) == 0 {
		return nil, fmt.Errorf("%w: command is required: a non-empty argument vector", policy.ErrInvalid)
	}
	if in.Command[0] == "" {
		return nil, fmt.Errorf("%w: command[0] (the program) is empty", policy.ErrInvalid)
	}
	if len(in.Command) > maxArgs {
		return nil, fmt.Errorf("%w: command has %d arguments, at most %d allowed", policy.ErrInvalid, len(in.Command), maxArgs)
	}
	total := 0
	for i, a := range in.Command {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("%w: command[%d] contains a NUL byte", policy.ErrInvalid, i)
		}
		total += len(a)
	}
	if total > maxArgBytes {
		return nil, fmt.Errorf("%w: command is %d bytes, at most %d allowed", policy.ErrInvalid, total, maxArgBytes)
	}
	var err error
	if err = c.validateSession(in); err != nil {
		return nil, err
	}
	if c.timeoutMs, err = c.boundedTimeout(in.TimeoutMs); err != nil {
		return nil, err
	}
	c.timeout = time.Duration(c.timeoutMs) * time.Millisecond
	hosts, err := c.takeSessionEntries(in) // ports.go
	if err != nil {
		return nil, err
	}
	if c.net, err = s.networkChoice(in.AllowNetwork, hosts, true); err != nil {
		return nil, err
	}
	if err = s.resolvePorts(c, in); err != nil {
		return nil, err
	}
	if err = s.hostPorts(c); err != nil { // hostports.go
		return nil, err
	}
	if c.memoryMb, err = bounded(execMemoryMb, in.MemoryMb); err != nil {
		return nil, err
	}
	if c.limits, err = (limitArgs{in.MaxProcesses, in.MaxWriteMb, in.CpuMs, in.MaxOpenFiles}).limits(c.memoryMb); err != nil {
		return nil, err
	}
	if c.mounts, err = s.resolveMounts(in.Mounts); err != nil {
		return nil, err
	}
	if err = refuseKernelFSMounts(c.mounts); err != nil { // first: it names the real reason
		return nil, err
	}
	if err = checkCommandAccess(c.mounts); err != nil {
		return nil, err
	}
	c.placing = s.placesMounts(c.mounts) // places.go
	rewrite := c.mounts
	if c.placing {
		rewrite = nil // the command sees the mounts at their sandboxPath
	}
	if c.env, err = validateEnv(in.Env, rewrite); err != nil {
		return nil, err
	}
	if c.caches, err = resolveCaches(in.Caches, c.mounts); err != nil {
		return nil, err
	}
	c.argv = make([]string, len(in.Command))
	for i, a := range in.Command {
		c.argv[i] = policy.RewriteArg(rewrite, a)
	}
	if in.Cwd != "" {
		if c.cwd, err = resolveCwd(c.mounts, in.Cwd); err != nil {
			return nil, err
		}
		if c.placing {
			c.cwd = sandboxCwd(c.mounts, c.cwd)
		}
	}
	return c, nil
}

// resolveCwd maps cwd (a sandbox path, or a host path inside a mount) to an existing
// host directory inside a declared mount.
func resolveCwd(mounts []policy.Mount, cwd string) (string, error) {
	if m, rel, err := policy.Resolve(mounts, cwd); err == nil {
		host := filepath.Join(m.Host, filepath.FromSlash(rel))
		real, err := policy.CanonicalDir(host)
		if err != nil {
			return "", fmt.Errorf("cwd: %w", err)
		}
		if !policy.Within(real, m.Host) {
			return "", fmt.Errorf("%w: cwd %s leads outside its mount", policy.ErrInvalid, cwd)
		}
		return real, nil
	}
	real, err := policy.CanonicalDir(cwd)
	if err != nil {
		return "", fmt.Errorf("cwd: %w", err)
	}
	for _, m := range mounts {
		if policy.Within(real, m.Host) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%w: cwd must be inside a declared mount (sandbox or host path) or omitted for the per-call scratch dir; %s is not", policy.ErrInvalid, cwd)
}

// ExecCommand runs one exec_command call. Safe for concurrent use.
func (s *Server) ExecCommand(ctx context.Context, in *ExecInput) (*ExecOutput, error) {
	start := time.Now()
	c, err := s.validateExec(in)
	if err != nil {
		return nil, err
	}
	if err := s.admitExec(ctx, in, c); err != nil {
		return nil, err
	}
	start = time.Now() // the user's time to answer is not the call's
	if c.yield != nil {
		return s.startSession(ctx, in, c, start)
	}
	leave, err := s.enter(ctx, c.mounts, store.User{Who: "an exec_command call (" + displayCommand(in.Command) + ")"})
	if err != nil {
		return nil, err
	}
	defer leave()
	scratch, err := s.scratch.take()
	if err != nil {
		return nil, err
	}
	defer s.scratch.release(scratch) // the tree is gone by then: nothing writes there any more
	cwd := c.cwd
	if cwd == "" {
		cwd = scratch
	}
	sb := commandPolicy(c.mounts, scratch, c.net)
	sb.ReadWrite = append(sb.ReadWrite, c.caches.dirs...)
	if err := placeMounts(&sb, c.mounts, c.placing); err != nil { // places.go
		return nil, err
	}
	cmd := &policy.Command{Argv: c.argv, Dir: cwd, Env: overlayEnv(overlayEnv(commandEnv(scratch), c.caches.env), c.env), Sandbox: sb, Unsafe: s.opts.Unsafe, Limits: c.limits.command()}
	pc, err := s.proxyCall(ctx, c, cmd)
	if err != nil {
		return nil, err
	}
	if pc != nil {
		defer pc.Close()
	}
	ports, err := s.portsFor(c, cmd, pc, false) // ports.go
	if err != nil {
		return nil, err
	}
	defer ports.close()
	out := &ExecOutput{Mounts: reportMounts(c.mounts)}
	var tail *outputTail // the latest output, for reports of progress
	if progressOf(ctx) != nil {
		tail = &outputTail{}
	}
	stdout := &cappedPipe{max: policy.ExecMaxStdout, what: "stdout", tail: tail}
	stderr := &cappedPipe{max: policy.ExecMaxStderr, what: "stderr", tail: tail}
	so, err := stdout.open()
	if err != nil {
		return nil, err
	}
	se, err := stderr.open()
	if err != nil {
		stdout.abort()
		return nil, err
	}
	tree, err := s.runner.Start(cmd, int64(c.memoryMb)<<20, so, se)
	so.Close()
	se.Close()
	if err != nil {
		stdout.abort()
		stderr.abort()
		return nil, runnerRefusal(err)
	}
	out.Unsandboxed = s.opts.Unsafe
	forget, err := s.track(tree)
	if err != nil {
		stdout.abort()
		stderr.abort()
		tree.Kill()
		return nil, err
	}
	defer forget()

	// The time limit's clock stops while the user is asked about a host the
	// command wants (askreach.go).
	run := cmdrun.Enforce(tree, c.runLimits())
	stopCancel := context.AfterFunc(ctx, func() { run.Kill(cmdrun.Reason{Kind: KilledCancelled}) })
	stopProgress := reportProgress(ctx, start, c.timeout, tail.line)
	end := run.Wait()
	stopProgress()
	stopCancel()
	out.Usage = usageOf(end.Usage)
	out.Isolation = cmdrun.Isolation(tree)
	out.Stdout, out.StdoutTruncated = stdout.finish()
	out.Stderr, out.StderrTruncated = stderr.finish()
	out.StdoutEncoding, out.StderrEncoding = textEncoding(out.Stdout), textEncoding(out.Stderr)
	out.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	ports.note(out)
	return c.ended(out, tree, end, scratch, pc)
}

// proxyCall starts the proxy's part of a call with allowHosts, and points cmd
// at it; nil without allowHosts. The caller closes it.
func (s *Server) proxyCall(ctx context.Context, c *execCall, cmd *policy.Command) (*proxy.Call, error) {
	if !c.net.proxied() {
		return nil, nil
	}
	pc, err := s.proxyFor(ctx, c.net, s.reachAsker(ctx, c.what, c.clock.Pause))
	if err != nil {
		return nil, err
	}
	if err := s.proxySetup(pc, cmd); err != nil {
		pc.Close()
		return nil, err
	}
	// The connect helper that git over ssh runs (GIT_SSH_COMMAND).
	cmd.Sandbox.ReadOnly = append(cmd.Sandbox.ReadOnly, s.exe)
	return pc, nil
}

// ended completes out, the result of a command whose tree is gone, with how it
// ended (end, as cmdrun.Run.Wait told it); scratch was its scratch dir, pc its
// proxy call (nil without allowHosts), closed here.
func (c *execCall) ended(out *ExecOutput, tree cmdrun.Tree, end cmdrun.End, scratch string, pc *proxy.Call) (*ExecOutput, error) {
	res, killedBy := end.Exit, end.KilledBy
	if end.Err != nil && killedBy.Kind == "" {
		return nil, end.Err
	}
	out.MountPaths = mountPaths(c, tree)
	// With end.Err set here the tree was killed for a reason of ours and the
	// supervisor had to finish the job (jail.Tree.Kill): the reason is the answer.
	out.Signal = res.Signal
	if res.Started {
		code := res.ExitCode
		out.ExitCode = &code
	} else {
		out.Error = res.SpawnError
		out.Stderr = res.SpawnError + "\n" + out.Stderr
	}
	out.Killed, out.KilledBy = killedBy.Kind != "", killedBy.Kind
	switch killedBy.Kind {
	case "":
	case KilledTimeout:
		out.Stderr = c.timeoutNote() + "\n" + out.Stderr
	case KilledCancelled:
		out.Stderr = "killed: call cancelled\n" + out.Stderr
	case KilledDisk:
		out.Stderr = killedBy.Text + "\n" + scratchListing(scratch, out.Isolation) + out.Stderr
	default:
		out.Stderr = killedBy.Text + "\n" + out.Stderr
	}
	c.noteRefusals(out, tree, killedBy)
	noteCompat(out, res)
	c.noteLimits(out, scratch, killedBy)
	if pc != nil {
		for _, name := range res.Lookups {
			pc.Deny(proxy.LookupDenial(name))
		}
		rec := pc.Close()
		out.Network = &rec
	}
	c.noteNetwork(out, out.Network)
	return out, nil
}

// commandPolicy is the allowlist for one command: system directories read-only,
// the call's own cgroups read-only, ro mounts read-only, rw mounts and scratch
// writable; nothing else.
func commandPolicy(mounts []policy.Mount, scratch string, net netChoice) policy.Sandbox {
	// Every path is canonical: system paths resolved by syspaths, mounts and
	// workspaces checked by validation, scratch dirs resolved when made.
	sb := *syspaths.Base()
	sb.AllowNetwork = net.open || net.proxied()
	if net.proxied() {
		// A network of its own with only the proxy in it (its port: see
		// proxySetup), and a name service of its own: none of the host's
		// resolver files.
		sb.PrivateNetwork = true
	}
	if net.open {
		syspaths.HostResolver(&sb)
	}
	// The call's own cgroups, where its runtimes find its limits.
	syspaths.OwnCgroups(&sb)
	sb.ReadWrite = []string{scratch}
	sb.Tmp = scratch
	for _, m := range mounts {
		if m.Writable {
			sb.ReadWrite = append(sb.ReadWrite, m.Host)
		} else {
			sb.ReadOnly = append(sb.ReadOnly, m.Host)
		}
		if m.Source != "" {
			sb.DenyWrite = append(sb.DenyWrite, m.Source)
		}
	}
	return sb
}

// commandEnv is built from nothing: nothing of the server's environment leaks.
func commandEnv(scratch string) []string {
	env := []string{
		"PATH=" + defaultPath,
		"HOME=" + scratch,
		// A private root shows the scratch dir's own tmp at /tmp and a
		// runtime dir in its own /run: the jail moves these two there.
		"TMPDIR=" + scratch,
		"XDG_RUNTIME_DIR=" + scratch,
		"BASH_ENV=/dev/null",
		"ENV=/dev/null",
		"LANG=C.UTF-8",
		"TERM=dumb",
		// Plain text for the model: no colours, no pager waiting for a key.
		"NO_COLOR=1",
		"PAGER=cat",
		"GIT_PAGER=cat",
	}
	return append(env, caEnv()...)
}

// caEnv points TLS clients at the system's CA bundle. Looked up once, like the
// system paths: the bundle does not move while the server runs.
var caEnv = sync.OnceValue(func() []string {
	var env []string
	for _, ca := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"} {
		if _, err := os.Stat(ca); err == nil {
			env = append(env, "SSL_CERT_FILE="+ca, "CURL_CA_BUNDLE="+ca, "REQUESTS_CA_BUNDLE="+ca, "NODE_EXTRA_CA_CERTS="+ca)
			break
		}
	}
	if fi, err := os.Stat("/etc/ssl/certs"); err == nil && fi.IsDir() {
		env = append(env, "SSL_CERT_DIR=/etc/ssl/certs")
	}
	return env
})

// execTool adapts ExecCommand to MCP: a spawn failure or a kill is a tool error that
// still carries the result object; an ordinary non-zero exit is a result.
func (s *Server) execTool(ctx context.Context, in *ExecInput) (*ExecOutput, bool, error) {
	out, err := s.ExecCommand(ctx, in)
	if err != nil {
		return nil, false, err
	}
	return out, !out.Running && (out.ExitCode == nil || out.Killed), nil
}

// execFailed is the result of an exec_command call that was refused: the command did
// not run, so exitCode is null, and the reason is both error and stderr (where a
// client that shows only the output finds it).
func execFailed(err error) *ExecOutput {
	return &ExecOutput{Stderr: err.Error(), Error: err.Error()}
}

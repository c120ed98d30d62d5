// Package cli is autobox's command line for scripts and people: `autobox js`, `exec`,
// `ws`, `batch` and `doctor`. It gives the same sandbox as the MCP tools without an MCP
// client. Every command is a thin front end over one supervisor.Server: arguments are
// turned into the tools' input objects and handed to the same methods the MCP handlers
// call, so validation, limits and error texts are the tools' own.
//
// Conventions: results go to stdout, diagnostics to stderr; --json prints the tools'
// result objects; --help prints examples; no colour, and a progress bar only when
// stderr is a terminal, so the commands behave the same from cron and CI.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/store"
	"github.com/autobox-dev/autobox/supervisor"
)

// Exit statuses. `exec` exits with the command's own status when it ran to the end, so
// these values can also come from the command; --json tells them apart.
const (
	ExitOK          = 0   // done
	ExitFailed      = 1   // the call ran and failed: JS threw, a sync conflicted, a batch line failed, doctor found exec_command refused
	ExitUsage       = 2   // bad flags or arguments on the command line
	ExitBusy        = 75  // another autobox process holds the workspace lock; retry (EX_TEMPFAIL)
	ExitTimeout     = 124 // killed at its time limit (as timeout(1))
	ExitRefused     = 125 // autobox refused the call: invalid arguments, sandbox unavailable, unknown workspace, internal failure
	ExitCannotStart = 126 // exec: the command could not be started
	ExitInterrupted = 130 // SIGINT or SIGTERM; the call was cancelled
	ExitMemory      = 137 // killed at its memory limit (128 + SIGKILL)
	ExitCPU         = 152 // exec: killed at its CPU time limit (128 + SIGXCPU)
	ExitDisk        = 153 // exec: killed at its limit of bytes written (128 + SIGXFSZ)
	ExitProcesses   = 154 // exec: killed at its process limit
)

// exitCodesHelp is shared by the help texts of the commands that run calls.
const exitCodesHelp = `Exit status:
  0    done                       1    the call failed (JS error, conflicts, failed lines)
  2    usage error                75   workspace lock busy: retry
  124  time limit                 125  refused: invalid arguments, no sandbox, unknown workspace
  126  command could not start    130  interrupted
  137  memory limit               152  cpu limit (exec)
  153  disk limit (exec)          154  process limit (exec)
`

// Main runs one command; args[0] is the command name (js, exec, ws, batch, doctor,
// session).
// It returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "autobox: no command (js, exec, ws, batch, doctor, session)")
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	switch args[0] {
	case "js":
		return e.js(args[1:])
	case "exec":
		return e.exec(args[1:])
	case "ws":
		return e.ws(args[1:])
	case "batch":
		return e.batch(args[1:])
	case "doctor":
		return e.doctor(args[1:])
	case "session":
		return e.session(args[1:])
	case "cache":
		return e.cache(args[1:])
	}
	fmt.Fprintf(stderr, "autobox: unknown command %q (js, exec, ws, batch, doctor, session)\n", args[0])
	return ExitUsage
}

// env is what every command works with: the process's streams and a context that
// ends on SIGINT/SIGTERM (in-flight calls are cancelled, their processes killed).
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// server starts the supervisor the command's calls go through. Only its errors reach
// stderr: its warnings are about the pool of a long-lived server (a spare worker cut
// short by Close, for one), and whatever stops a call is in that call's result.
// Workers skip their warm-up call: a command line's calls arrive as soon as the
// workers exist, so warming would only add its CPU time to theirs.
func (e *env) server(poolSize int) (*supervisor.Server, error) {
	return e.serverWith(supervisor.Options{PoolSize: poolSize})
}

// oneCommandServer is server for a process that runs one command and no
// execute_js: no JS worker pool, and no launcher but the command's own,
// started with the server so that it starts while the rest of the process
// gets ready (a pool's spares would be started only to be ended unused).
func (e *env) oneCommandServer() (*supervisor.Server, error) {
	return e.serverWith(supervisor.Options{PoolSize: -1, Launchers: -1})
}

func (e *env) serverWith(opts supervisor.Options) (*supervisor.Server, error) {
	opts.Throughput = true
	opts.Log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	s, err := supervisor.New(opts)
	if err != nil {
		return nil, fmt.Errorf("starting autobox: %w", err)
	}
	return s, nil
}

// errorCode maps an error returned by a supervisor method to an exit status.
func (e *env) errorCode(err error) int {
	switch {
	case errors.Is(err, store.ErrBusy):
		return ExitBusy
	case e.ctx.Err() != nil:
		return ExitInterrupted
	}
	return ExitRefused
}

// fail reports an error of a call, in the command line's words (see words), and
// returns its exit status.
func (e *env) fail(cmd string, err error) int {
	fmt.Fprintf(e.stderr, "autobox %s: %s\n", cmd, escapeText(wordsOf(cmd).say(workspaceSteps(err.Error()))))
	return e.errorCode(err)
}

// usage reports a command-line mistake.
func (e *env) usage(cmd string, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "autobox %s: %s\nRun 'autobox %s --help' for usage.\n", cmd, fmt.Sprintf(format, a...), cmd)
	return ExitUsage
}

// newFlags makes a flag set whose errors and help the caller prints (see parse).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses flags that may come before or after positional arguments (until "--",
// after which everything is positional) and returns the positional arguments. done is
// true when the command should exit with code: --help was printed, or a usage error.
func (e *env) parse(fs *flag.FlagSet, cmd, help string, args []string) (pos []string, done bool, code int) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.printHelp(fs, help)
				return nil, true, ExitOK
			}
			return nil, true, e.usage(cmd, "%s", flagError(err))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, false, 0
		}
		// The flag package drops a "--" it stops at; whatever follows it is positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), false, 0
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// action reads a command's action, its first argument: one of actions, or a
// request for help. done is true when the command should exit with code.
func (e *env) action(cmd, help string, fs *flag.FlagSet, args []string, actions ...string) (action string, done bool, code int) {
	list := strings.Join(actions[:len(actions)-1], ", ") + " or " + actions[len(actions)-1]
	switch {
	case len(args) == 0:
		return "", true, e.usage(cmd, "no action: %s", list)
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help":
		e.printHelp(fs, help)
		return "", true, ExitOK
	case !slices.Contains(actions, args[0]):
		return "", true, e.usage(cmd, "unknown action %q: %s", args[0], list)
	}
	return args[0], false, 0
}

// given reports whether the flag was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// printHelp prints a command's help text and its flags to stdout.
func (e *env) printHelp(fs *flag.FlagSet, help string) {
	fmt.Fprint(e.stdout, help)
	fmt.Fprintln(e.stdout, "\nFlags:")
	e.stdout.Write(printFlags(fs))
}

// opt is a numeric flag that remembers whether it was given, so an absent flag leaves
// the tool's default in force.
type opt[T ~int | ~int64] struct {
	v     *T
	parse func(string) (T, error)
}

func (o *opt[T]) String() string {
	if o.v == nil {
		return ""
	}
	return fmt.Sprint(*o.v)
}

func (o *opt[T]) Set(s string) error {
	n, err := o.parse(s)
	if err != nil {
		return err
	}
	o.v = &n
	return nil
}

func optInt() opt[int] {
	return opt[int]{parse: func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, errors.New("not an integer")
		}
		return n, nil
	}}
}

func optInt64() opt[int64] {
	return opt[int64]{parse: func(s string) (int64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errors.New("not an integer")
		}
		return n, nil
	}}
}

// optMillis is a time limit in milliseconds: a bare number of ms ("800") or a Go
// duration ("2s", "1500ms").
func optMillis() opt[int] { return opt[int]{parse: parseMillis} }

func parseMillis(s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("want milliseconds (800) or a duration (2s)")
	}
	if d%time.Millisecond != 0 {
		return 0, errors.New("not a whole number of milliseconds")
	}
	ms := d.Milliseconds()
	if ms != int64(int(ms)) {
		return 0, errors.New("out of range")
	}
	return int(ms), nil
}

// mountsFlag collects --mount HOST:SANDBOX[:ro|rw] and --workspace ID into the tools'
// mount list, in the order given.
type mountsFlag struct{ specs *[]policy.MountSpec }

func (m mountsFlag) String() string { return "" }

func (m mountsFlag) Set(v string) error {
	spec, err := parseMount(v)
	if err != nil {
		return err
	}
	*m.specs = append(*m.specs, spec)
	return nil
}

type workspaceFlag struct{ specs *[]policy.MountSpec }

func (w workspaceFlag) String() string { return "" }

func (w workspaceFlag) Set(id string) error {
	*w.specs = append(*w.specs, policy.MountSpec{WorkspaceID: id})
	return nil
}

// parseMount splits HOST:SANDBOX[:ro|rw]. The sandbox path is what follows the last
// colon (after an optional mode), so a host path may itself contain colons. A relative
// host path is taken relative to the current directory, as every Unix tool does; the
// rest of the validation is the tools'.
func parseMount(v string) (policy.MountSpec, error) {
	var spec policy.MountSpec
	for _, mode := range []string{"ro", "rw"} {
		if strings.HasSuffix(v, ":"+mode) {
			spec.Mode = mode
			v = strings.TrimSuffix(v, ":"+mode)
			break
		}
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return spec, errors.New("want HOST:SANDBOX[:ro|rw], e.g. ./data:/mnt/data:ro")
	}
	host, err := absPath(v[:i])
	if err != nil {
		return spec, err
	}
	spec.HostPath, spec.SandboxPath = host, v[i+1:]
	return spec, nil
}

// absPath makes a host path given on the command line absolute, relative to
// the working directory's canonical path: where the user stands is theirs
// (a link in $PWD is not a call's), while what they typed after it is checked
// for links like any host path (policy.NotCanonical).
func absPath(p string) (string, error) {
	if p == "" || filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err == nil {
		wd, err = filepath.EvalSymlinks(wd)
	}
	if err != nil {
		return "", fmt.Errorf("making %s absolute: %w", p, err)
	}
	return filepath.Join(wd, p), nil
}

// limitFlags are the flags execute_js and exec_command share.
type limitFlags struct {
	timeout opt[int]
	memory  opt[int]
	network bool
	hosts   listFlag // nil: none given
	mounts  []policy.MountSpec
	json    bool
}

func (l *limitFlags) register(fs *flag.FlagSet, defTimeout, maxTimeout, defMemory, minMemory, maxMemory int) {
	l.timeout, l.memory = optMillis(), optInt()
	fs.Var(&l.timeout, "timeout", fmt.Sprintf("time limit: milliseconds or a duration like 2s (default %dms, max %dms)", defTimeout, maxTimeout))
	fs.Var(&l.memory, "memory", fmt.Sprintf("memory limit in MB (default %d, %d-%d)", defMemory, minMemory, maxMemory))
	fs.BoolVar(&l.network, "network", false, "allow the whole network")
	fs.Var(&l.hosts, "allow-host", "allow this host only, through autobox's proxy: example.com, *.example.com, example.com:8443, localhost:5432, 10.0.0.0/8:5432 (repeatable; not with --network)")
	fs.Var(mountsFlag{&l.mounts}, "mount", "mount a host directory: HOST:SANDBOX[:ro|rw] (default ro; repeatable)")
	fs.Var(workspaceFlag{&l.mounts}, "workspace", "mount a workspace read-write at its sandbox path, by id (repeatable)")
	fs.BoolVar(&l.json, "json", false, "print the whole result object as JSON")
}

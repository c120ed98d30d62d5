package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/supervisor"
)

const execHelp = `Usage: autobox exec [flags] [--] ARGV...

Run a command under the OS sandbox, exactly as the exec_command tool does: reads
limited to system directories and --mount/--workspace directories, writes only to rw
mounts and a per-call scratch dir ($HOME, $TMPDIR), no network unless --network (all
of it) or --allow-host (those hosts, through autobox's proxy), the whole process tree
killed at --timeout, an RSS watchdog at --memory, and limits on processes, bytes
written, CPU time and open files (see Flags). Sandbox paths
(/mnt/...) in ARGV are rewritten to host paths. Stdin is not passed on.

--allow-host session:ID:PORT puts a running session's PORT (a dev server) at the
command's own localhost:PORT, and opens nothing else; --expose PORT (with --yield)
forwards a session's PORT to this machine's 127.0.0.1, at a port autobox prints.

With --yield the command is started as a session: autobox answers after at most
that long, and if the command still runs, prints its session id on stdout (its
output so far on stderr) and leaves it running in its sandbox, for 'autobox session
poll|write|signal|close' (see autobox session --help). --timeout may then be up to
1h (default 10m). Sessions live in a session server of your own that autobox starts
for them; they end with it.

The command's output is collected by the sandbox (stdout up to 256 KB, stderr up to
64 KB, longer output is cut with a note) and printed when it ends: stdout to stdout,
stderr to stderr. autobox exits with the command's exit status, or one of the codes
below when autobox itself ended or refused the call. With --json it prints the result
object {stdout, stderr, exitCode, killed, durationMs, ...} on stdout instead.

` + exitCodesHelp + `
Examples:
  autobox exec --mount .:/mnt/src -- ls -la /mnt/src
  autobox exec --mount ./src:/mnt/src:rw --cwd /mnt/src -- make test
  autobox exec --timeout 10s --memory 512 -- python3 -c 'print(1)'
  autobox exec --max-processes 64 --max-write-mb 100 --cpu 5s -- make -j8
  autobox exec --workspace 0b5e... --cwd /mnt/project -- sh -c 'sed -i s/a/b/ x.txt'
  autobox exec --json -- uname -a | jq .stdout
  autobox exec --env CI=1 --env 'PATH=/usr/local/go/bin:$PATH' --mount .:/mnt/src --cwd /mnt/src -- go vet ./...
  autobox exec --allow-host pypi.org --allow-host files.pythonhosted.org -- pip download requests
  id=$(autobox exec --yield 2s --network --timeout 1h -- python3 -u -m http.server 8000)
  id=$(autobox exec --yield 1s --tty -- sh -i)
  id=$(autobox exec --yield 2s --expose 8000 --timeout 1h -- python3 -u -m http.server 8000)
  autobox exec --allow-host session:$id:8000 -- curl -s http://localhost:8000/
`

func (e *env) exec(args []string) int {
	fs := newFlags("exec")
	var l limitFlags
	l.register(fs, policy.ExecDefaultTimeoutMs, policy.ExecMaxTimeoutMs, policy.ExecDefaultMemoryMb, policy.ExecMinMemoryMb, policy.ExecMaxMemoryMb)
	cwd := fs.String("cwd", "", "working directory (sandbox or host path) inside a mount; default: the scratch dir")
	yield, rows, cols := optMillis(), optInt(), optInt()
	fs.Var(&yield, "yield", "start a session: answer after at most this long (e.g. 2s, max 30s) and leave the command running; prints its id (see autobox session)")
	tty := fs.Bool("tty", false, "with --yield: run the command on a pseudo-terminal")
	fs.Var(&rows, "rows", "--tty: the terminal's height (default 24)")
	fs.Var(&cols, "cols", "--tty: the terminal's width (default 80)")
	var r resourceFlags
	r.register(fs)
	var caches cacheFlag
	fs.Var(&caches, "cache", "a tool cache kept between calls (repeatable): npm, pip, go or cargo (see autobox cache)")
	var expose portsFlag
	fs.Var(&expose, "expose", "with --yield: a port the session's server listens on, forwarded to a port of this machine's 127.0.0.1 that autobox prints (repeatable; closed when the session ends)")
	var vars envFlag
	fs.Var(&vars, "env", "NAME=VALUE: an environment variable for the command (repeatable), e.g. --env CI=1 --env 'PATH=/usr/local/go/bin:$PATH'; NAME alone passes your own value")
	// ARGV starts at the first non-flag or after "--": flags after it are the command's.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			e.printHelp(fs, execHelp)
			return ExitOK
		}
		return e.usage("exec", "%s", flagError(err))
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return e.usage("exec", "no command: give ARGV after the flags, e.g. autobox exec -- ls")
	}
	// A relative cwd is a host path; an absolute one may be a sandbox path the tool maps.
	dir, err := absPath(*cwd)
	if err != nil {
		return e.usage("exec", "%v", err)
	}
	in := &supervisor.ExecInput{Command: argv, TimeoutMs: l.timeout.v, MemoryMb: l.memory.v, AllowNetwork: l.network, AllowHosts: l.hosts, Mounts: l.mounts, Cwd: dir,
		MaxProcesses: r.processes.v, MaxWriteMb: r.writeMb.v, CpuMs: r.cpu.v, MaxOpenFiles: r.files.v,
		YieldMs: yield.v, TTY: *tty, Rows: rows.v, Cols: cols.v}
	in.Env = supervisor.EnvList(vars)
	in.Caches = caches
	in.Expose = expose
	if yield.v != nil {
		return e.execYield(in, l.json)
	}
	if supervisor.NamesSessionPort(in.AllowHosts) {
		// The session is the session server's: the call runs there too.
		return e.execBesideSessions(in, l.json)
	}
	s, err := e.oneCommandServer()
	if err != nil {
		return e.fail("exec", err)
	}
	defer s.Close()
	ctx, drawn := e.withCallProgress(e.ctx, "exec")
	out, err := s.ExecCommand(ctx, in)
	drawn()
	if err != nil {
		return e.fail("exec", err)
	}
	if l.json {
		return e.printed("exec", writeJSON(e.stdout, out), e.execStatus(out))
	}
	return e.printOutput("exec", out, false)
}

// printOutput prints a command's output as it came, stdout to stdout and stderr to
// stderr, and returns the exit status: of the command when it ended, ExitOK while
// it runs on (a session).
func (e *env) printOutput(cmd string, out *supervisor.ExecOutput, running bool) int {
	io.WriteString(e.stdout, out.Stdout)
	stderr := out.Stderr
	if out.Killed {
		// The reason, first, in the command line's words (--max-write-mb, not maxWriteMb).
		reason, rest, _ := strings.Cut(stderr, "\n")
		stderr = wordsOf("exec").say(reason) + "\n" + rest
	}
	io.WriteString(e.stderr, notesInFlagWords(stderr))
	if running {
		return ExitOK
	}
	if out.ExitCode == nil && !out.Killed {
		fmt.Fprintln(e.stderr, "autobox "+cmd+": the command could not be started")
	}
	return e.execStatus(out)
}

// execStatus is the exit status of a finished exec_command call: why a command
// was killed is the result's killedBy.
func (e *env) execStatus(out *supervisor.ExecOutput) int {
	switch {
	case out.Killed && out.KilledBy == supervisor.KilledMemory:
		return ExitMemory
	case out.Killed && out.KilledBy == supervisor.KilledProcesses:
		return ExitProcesses
	case out.Killed && out.KilledBy == supervisor.KilledDisk:
		return ExitDisk
	case out.Killed && out.KilledBy == supervisor.KilledCPU:
		return ExitCPU
	case out.Killed && out.KilledBy == supervisor.KilledTimeout:
		return ExitTimeout
	case out.Killed:
		return ExitInterrupted
	case out.ExitCode == nil:
		return ExitCannotStart
	case *out.ExitCode < 0: // ended by a signal of its own (out.Signal says which), as a shell reports it
		if n := signalNumber(out.Signal); n > 0 {
			return 128 + n
		}
		return ExitFailed
	}
	return *out.ExitCode
}

// resourceFlags are exec's limits beyond time and memory: exec_command's maxProcesses,
// maxWriteMb, cpuMs and maxOpenFiles.
type resourceFlags struct {
	processes, writeMb, cpu, files opt[int]
}

func (r *resourceFlags) register(fs *flag.FlagSet) {
	r.processes, r.writeMb, r.cpu, r.files = optInt(), optInt(), optMillis(), optInt()
	fs.Var(&r.processes, "max-processes", fmt.Sprintf("processes and threads alive at once (default %d, %d-%d)", policy.ExecDefaultMaxProcesses, policy.ExecMinMaxProcesses, policy.ExecMaxMaxProcesses))
	fs.Var(&r.writeMb, "max-write-mb", fmt.Sprintf("MB the command may write to files; one file past it gets EFBIG (default %d, 0-%d)", policy.ExecDefaultMaxWriteMb, policy.ExecMaxMaxWriteMb))
	fs.Var(&r.cpu, "cpu", fmt.Sprintf("CPU time of the whole tree: milliseconds or a duration like 2s (default 0: none, max %dms)", policy.ExecMaxCPUMs))
	fs.Var(&r.files, "max-open-files", fmt.Sprintf("open files per process (default %d, %d-%d)", policy.ExecDefaultMaxOpenFiles, policy.ExecMinMaxOpenFiles, policy.ExecMaxMaxOpenFiles))
}

// envFlag is exec's --env: NAME=VALUE, or NAME for the value in autobox's own
// environment (a name it lacks is an error: the command would not get it).
type envFlag []string

func (f *envFlag) String() string { return "" }

func (f *envFlag) Set(v string) error {
	if !strings.Contains(v, "=") {
		host, found := os.LookupEnv(v)
		if !found {
			return fmt.Errorf("%s is not set in your environment: give --env %s=VALUE", v, v)
		}
		v += "=" + host
	}
	*f = append(*f, v)
	return nil
}

// notesInFlagWords puts autobox's own notes at the end of a command's stderr
// ("[autobox: maxProcesses 3 refused ...]") in the command line's words.
func notesInFlagWords(stderr string) string {
	lines := strings.SplitAfter(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == "" {
			continue
		}
		if !strings.HasPrefix(lines[i], "[autobox: ") {
			break
		}
		lines[i] = wordsOf("exec").say(lines[i])
	}
	return strings.Join(lines, "")
}

// portsFlag is exec's --expose: a port, repeatable.
type portsFlag []int

func (f *portsFlag) String() string { return "" }

func (f *portsFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q is not a port from 1 to 65535", v)
	}
	*f = append(*f, n)
	return nil
}

// execBesideSessions runs a call that names a session's port
// (--allow-host session:ID:PORT) in the session server, which runs the session.
func (e *env) execBesideSessions(in *supervisor.ExecInput, asJSON bool) int {
	out, err := e.sessionCall("exec_command", in)
	if err != nil {
		return e.fail("exec", err)
	}
	if asJSON {
		return e.printed("exec", writeJSON(e.stdout, &out.ExecOutput), e.execStatus(&out.ExecOutput))
	}
	return e.printOutput("exec", &out.ExecOutput, false)
}

package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/supervisor"
)

const execHelp = `Usage: autobox exec [flags] [--] ARGV...

Run a command under the OS sandbox, exactly as the exec_command tool does: reads
limited to system directories and --mount/--workspace directories, writes only to rw
mounts and a per-call scratch dir ($HOME, $TMPDIR), no network unless --network (all
of it) or --allow-host (those hosts, through autobox's proxy), the
whole process tree killed at --timeout, an RSS watchdog at --memory. Sandbox paths
(/mnt/...) in ARGV are rewritten to host paths. Stdin is not passed on.

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
  autobox exec --workspace 0b5e... --cwd /mnt/project -- sh -c 'sed -i s/a/b/ x.txt'
  autobox exec --json -- uname -a | jq .stdout
  autobox exec --allow-host pypi.org --allow-host files.pythonhosted.org -- pip download requests
`

func (e *env) exec(args []string) int {
	fs := newFlags("exec")
	var l limitFlags
	l.register(fs, policy.ExecDefaultTimeoutMs, policy.ExecMaxTimeoutMs, policy.ExecDefaultMemoryMb, policy.ExecMinMemoryMb, policy.ExecMaxMemoryMb)
	cwd := fs.String("cwd", "", "working directory (sandbox or host path) inside a mount; default: the scratch dir")
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
	s, err := e.server(-1) // no JS worker to warm
	if err != nil {
		return e.fail("exec", err)
	}
	defer s.Close()
	out, err := s.ExecCommand(e.ctx, &supervisor.ExecInput{Command: argv, TimeoutMs: l.timeout.v, MemoryMb: l.memory.v, AllowNetwork: l.network, AllowHosts: l.hosts, Mounts: l.mounts, Cwd: dir})
	if err != nil {
		return e.fail("exec", err)
	}
	if l.json {
		return e.printed("exec", writeJSON(e.stdout, out), e.execStatus(out))
	}
	io.WriteString(e.stdout, out.Stdout)
	io.WriteString(e.stderr, out.Stderr)
	if out.ExitCode == nil && !out.Killed {
		fmt.Fprintln(e.stderr, "autobox exec: the command could not be started")
	}
	return e.execStatus(out)
}

// execStatus is the exit status of a finished exec_command call. Why a command was
// killed is only in the stderr prefix the tool documents ("killed: timeout ...",
// "memory limit exceeded ... RSS watchdog").
func (e *env) execStatus(out *supervisor.ExecOutput) int {
	switch {
	case out.Killed && strings.HasPrefix(out.Stderr, "memory limit exceeded"):
		return ExitMemory
	case out.Killed && strings.HasPrefix(out.Stderr, "killed: timeout"):
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

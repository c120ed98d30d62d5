//go:build darwin || linux

package seatbelt

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/internal/rlimit"
	"github.com/autobox-dev/autobox/policy"
)

// A command's per-process limits (policy.Limits: RLIMIT_FSIZE, RLIMIT_NOFILE,
// RLIMIT_CPU) are set by `autobox worker limits`, which exec.Cmd starts in the
// command's place and which sets them on itself and execs sandbox-exec: rlimits
// and an ignored SIGXFSZ pass through exec, and Go's fork has no hook to set
// them between fork and exec (the supervisor cannot lower its own). It runs
// before the profile applies, so the profile need not allow the autobox binary.
// macOS has no cgroups: the number of processes, the bytes written in all and
// the tree's CPU time are the supervisor's watchdog's.

// LimitsRole is the role's word after "worker".
const LimitsRole = "limits"

// limitsExe is the binary that runs LimitsMain (the tests' runs without limits
// never call it).
var limitsExe = os.Executable

// limitsArgv returns the argv that runs path with argv under l through exe (the
// autobox binary), or nil when l sets no per-process limit.
func limitsArgv(exe string, l *policy.Limits, path string, argv []string) []string {
	if l == nil || (l.WriteBytes < 0 && l.OpenFiles <= 0 && l.CPU <= 0) {
		return nil
	}
	out := []string{exe, "worker", LimitsRole}
	if l.WriteBytes >= 0 {
		out = append(out, "--fsize", strconv.FormatInt(l.WriteBytes, 10))
	}
	if l.OpenFiles > 0 {
		out = append(out, "--nofile", strconv.Itoa(l.OpenFiles))
	}
	if l.CPU > 0 {
		out = append(out, "--cpu", strconv.FormatInt(int64((l.CPU+time.Second-1)/time.Second), 10))
	}
	return append(append(out, "--", path), argv...)
}

// LimitsMain is the body of `autobox worker limits [--fsize BYTES] [--nofile N]
// [--cpu SECONDS] -- PATH ARGV...`: it sets the limits (soft and hard; the CPU
// hard limit a second above the soft one, so SIGXCPU comes first), ignores
// SIGXFSZ (a write past the file size limit then fails with EFBIG instead of
// killing the writer) and execs PATH with ARGV. It never returns.
func LimitsMain(args []string) {
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "autobox worker limits: %v\n", err)
		os.Exit(126)
	}
	for len(args) > 0 && args[0] != "--" {
		if len(args) < 2 {
			fail(fmt.Errorf("%s needs a value", args[0]))
		}
		v, err := strconv.ParseUint(args[1], 10, 64)
		if err != nil {
			fail(fmt.Errorf("%s %q: %v", args[0], args[1], err))
		}
		switch args[0] {
		case "--fsize":
			signal.Ignore(syscall.SIGXFSZ)
			err = rlimit.Set(syscall.RLIMIT_FSIZE, v, v)
		case "--nofile":
			err = rlimit.Set(syscall.RLIMIT_NOFILE, v, v)
		case "--cpu":
			err = rlimit.Set(syscall.RLIMIT_CPU, v, v+1)
		default:
			err = fmt.Errorf("unknown flag %s", args[0])
		}
		if err != nil {
			fail(fmt.Errorf("%s %d: %w", args[0], v, err))
		}
		args = args[2:]
	}
	if len(args) < 3 {
		fail(fmt.Errorf("no command after --"))
	}
	fail(syscall.Exec(args[1], args[2:], os.Environ()))
}

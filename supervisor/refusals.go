package supervisor

import (
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/jail"
)

// What the sandbox refused a command without ending it: a fork past
// maxProcesses fails with EAGAIN, and a command that gives up by itself
// ("sh: 0: Cannot fork", exit 2) would leave nothing in its result that says a
// limit did it. Every result counts the refusals in usage and notes them in
// stderr, whoever ended the call. The kernel counts them where the command has
// a pids cgroup of its own (jail.Tree.ForksRefused); under RLIMIT_NPROC alone
// (an ordinary user's user namespaces) they are not counted, and the watchdog's
// hold at the limit is what ends a command that keeps trying. Without
// namespaces RLIMIT_NPROC counts the user's every process (jail/launcher/nprochost_linux.go).

// noteRefusals sets out.Usage.ForksRefused and, unless the call was killed at
// the process limit (whose reason says it already), appends a note to stderr.
func (c *execCall) noteRefusals(out *ExecOutput, t cmdrun.Tree, killedBy cmdrun.Reason) {
	n, ok := cmdrun.ForksRefused(t)
	if !ok {
		return
	}
	if n < 0 {
		// Refused but not counted: the command's own words are the evidence.
		if killedBy.Kind != KilledProcesses && saysForkFailed(out.Stdout+"\n"+out.Stderr) {
			shared := ""
			if cmdrun.Isolation(t) == jail.ModeLandlock {
				shared = " (without namespaces it counts every process of the user: forks are refused sooner when the user's other processes grew while the command ran)"
			}
			out.Stderr += fmt.Sprintf("[autobox: the output says a fork failed; maxProcesses %d is held here by the kernel (RLIMIT_NPROC), which refuses forks past it without counting them%s: if the command needs more processes and threads at once, raise maxProcesses]\n", c.limits.Processes, shared)
		}
		return
	}
	if n == 0 {
		return
	}
	out.Usage.ForksRefused = n
	if killedBy.Kind == KilledProcesses {
		return
	}
	out.Stderr += fmt.Sprintf("[autobox: maxProcesses %d refused %d fork(s) of this command (EAGAIN: \"Cannot fork\", \"Resource temporarily unavailable\"); if it needs more processes and threads at once, raise maxProcesses]\n", c.limits.Processes, n)
}

// saysForkFailed reports whether output holds what shells, runtimes and libc
// say when fork or clone fails with EAGAIN.
func saysForkFailed(output string) bool {
	o := strings.ToLower(output)
	for _, w := range []string{"cannot fork", "can't fork", "could not fork", "fork: resource temporarily unavailable", "fork: retry", "fork failed", "resource temporarily unavailable"} {
		if strings.Contains(o, w) && (strings.Contains(w, "fork") || strings.Contains(o, "fork") || strings.Contains(o, "thread")) {
			return true
		}
	}
	return false
}

//go:build linux

package test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestNoNamespacesKernelProcessLimit (issue 32, item 6): without namespaces
// the kernel holds a command's processes too, not only the watchdog: a pids
// cgroup where the server may make one (root on cgroup v1), else RLIMIT_NPROC
// at the user's tasks plus maxProcesses plus a margin (jail/launcher/nprochost_linux.go),
// which the command sees in /proc/self/limits, soft and hard. The control:
// forks under maxProcesses are refused nothing.
func TestNoNamespacesKernelProcessLimit(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	s := startEnv(t, []string{jail.NoNamespacesEnv + "=1"})
	if kernelProcessLimit(t, s) {
		t.Log("commands have a pids cgroup of their own here")
	} else {
		if os.Geteuid() == 0 {
			t.Skip("root without a pids cgroup: commands run as an unprivileged uid whose RLIMIT_NPROC the jail tests cannot check here")
		}
		o, _ := s.exec(map[string]any{"command": []string{"sh", "-c", "grep '^Max processes' /proc/self/limits; cat /proc/loadavg"}, "maxProcesses": 40, "timeoutMs": 30000})
		lines := strings.Split(o.Stdout, "\n")
		f := strings.Fields(strings.TrimPrefix(lines[0], "Max processes"))
		if len(lines) < 2 || len(f) < 2 || len(strings.Fields(lines[1])) < 4 {
			t.Fatalf("limits and loadavg: %+v", o)
		}
		soft, _ := strconv.Atoi(f[0])
		hard, _ := strconv.Atoi(f[1])
		_, all, _ := strings.Cut(strings.Fields(lines[1])[3], "/")
		tasks, _ := strconv.Atoi(all)
		// At most every task of the machine (the user's are fewer), maxProcesses
		// and the margin, with room for the machine's tasks to move meanwhile.
		if soft != hard || soft < 40 || soft > tasks+40+64+1000 {
			t.Errorf("RLIMIT_NPROC %d/%d: want soft = hard, at least maxProcesses 40, at most the machine's %d tasks plus 40 plus the margin", soft, hard, tasks)
		}
	}
	o := s.limited(map[string]any{"command": forks(30), "maxProcesses": 40, "timeoutMs": 30000})
	if o.Killed || o.code() != 0 || o.Stdout != "forked 30\n" {
		t.Errorf("30 forks under maxProcesses 40: %+v", o)
	}
}

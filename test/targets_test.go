//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// Issue 20 item 1: a command acts on no process outside its call. prlimit,
// setpriority, sched_setaffinity, sched_setscheduler and ioprio_set need
// only a matching uid, which Landlock's scoping does not look at: a command
// of an ordinary user's server (or of a root server without namespaces, on
// another process of its uid) lowered the server's RLIMIT_AS until it
// crashed. The victims are the server and a process of the command's own
// uid outside the call; each change is then made by the command on itself
// (pid 0), which works, and the victims' limits are read from outside to
// be unchanged.

// commandUID is the uid a command of this test's server runs as where it
// has no user namespace: a root server drops commands to 65534.
func commandUID() int {
	if os.Geteuid() == 0 {
		return 65534
	}
	return os.Geteuid()
}

// victim starts a process of the command's uid outside any call.
func victim(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if uid := commandUID(); uid != os.Geteuid() {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// limitsOf reads what the kernel says of pid's limits (and niceness and
// CPUs), from outside.
func limitsOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		t.Fatal(err)
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	var set [16]uint64
	_, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(pid), 128, uintptr(unsafe.Pointer(&set)))
	return fmt.Sprintf("%s\nnice %s policy %s cpus %x", b, f[16], f[38], set)
}

// softHard returns the soft and hard limit of resource (its line's title in
// /proc/PID/limits) as numbers for the probe.
func softHard(t *testing.T, limits, title string) (string, string) {
	t.Helper()
	for _, line := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(line, title); ok {
			f := strings.Fields(rest)
			for i, v := range f[:2] {
				if v == "unlimited" {
					f[i] = strconv.FormatUint(^uint64(0), 10)
				}
			}
			return f[0], f[1]
		}
	}
	t.Fatalf("no %q in\n%s", title, limits)
	return "", ""
}

// lowered is the soft and hard limit that lower resource what of a process
// whose limits are these, its hard limit kept.
func lowered(t *testing.T, limits, what string) (string, string) {
	title := map[string]string{"as": "Max address space", "nofile": "Max open files"}[what]
	soft, hard := softHard(t, limits, title)
	if what == "as" {
		soft = strconv.FormatUint(1<<40, 10) // 1 TiB: a change, no harm if it lands
	} else {
		n, _ := strconv.ParseUint(soft, 10, 64)
		soft = strconv.FormatUint(n-1, 10)
	}
	return soft, hard
}

var changes = []string{"as", "nofile", "nice", "affinity", "idle", "ioidle"}

func TestActOnOtherProcesses(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		victims := map[string]int{"the server": s.cmd.Process.Pid, fmt.Sprintf("a process of uid %d", commandUID()): victim(t)}
		for name, pid := range victims {
			before := limitsOf(t, pid)
			for _, what := range changes {
				args := []string{"on", what, strconv.Itoa(pid)}
				if what == "as" || what == "nofile" {
					soft, hard := lowered(t, before, what)
					args = append(args, soft, hard)
				}
				wantDenied(t, what+" of "+name, s.probe(nil, nil, args...))
			}
			if after := limitsOf(t, pid); after != before {
				t.Errorf("%s changed:\n%s\nthen\n%s", name, before, after)
			}
		}
		// Positive control: the same changes, by the command on itself.
		for _, what := range changes {
			args := []string{"on", what, "0"}
			switch what {
			case "as":
				args = append(args, strconv.FormatUint(1<<40, 10), strconv.FormatUint(1<<40, 10))
			case "nofile":
				args = append(args, "100", "100")
			}
			wantAllowed(t, what+" of itself", s.probe(nil, nil, args...))
		}
		// Tools that change themselves, or the program they start, work.
		for _, script := range []string{
			`nice -n 5 true`, `ulimit -n 100 && test "$(ulimit -n)" = 100`, `ulimit -v 4000000 && true`,
			`taskset -c 0 true`, `ionice -c3 true`, `renice -n 3 -g 0 >/dev/null`,
			`python3 -c 'import os; os.sched_setaffinity(0, {0}); assert os.sched_getaffinity(0) == {0}'`,
			`python3 -c 'import asyncio, subprocess; asyncio.run(asyncio.create_subprocess_exec("true"))'`,
			`node -e 'require("child_process").execFileSync("true")'`,
			`/mnt/tools/probe args go-runtime >/dev/null`,
		} {
			o, _ := s.exec(map[string]any{"command": bash(script), "mounts": []map[string]any{toolsMount()}})
			if o.code() != 0 {
				t.Errorf("%s: %+v", script, o)
			}
		}
	})
}

// TestActOnOtherProcessesCLI: the same through `autobox exec`.
func TestActOnOtherProcessesCLI(t *testing.T) {
	eachCLIMode(t, func(t *testing.T, h *cliHome, m serverMode) {
		pid := victim(t)
		before := limitsOf(t, pid)
		soft, hard := lowered(t, before, "nofile")
		r := h.run("", "exec", "--mount", toolsDir+":/mnt/tools", "--", "/mnt/tools/probe", "on", "nofile", strconv.Itoa(pid), soft, hard)
		if r.code != 1 || !strings.HasPrefix(r.stdout, "denied:") {
			t.Errorf("lowering the open files of a process outside: %s", r)
		}
		if after := limitsOf(t, pid); after != before {
			t.Errorf("changed:\n%s\nthen\n%s", before, after)
		}
		r = h.run("", "exec", "--mount", toolsDir+":/mnt/tools", "--", "/mnt/tools/probe", "on", "nofile", "0", "100", "100")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ok") {
			t.Errorf("positive control on itself: %s", r)
		}
	})
}

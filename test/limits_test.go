//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The limits of issue 14 beyond time and memory: processes, bytes written, CPU
// time, open files; each kill names its limit, and every result reports usage.
// Each test has a positive control just under its limit.

// usageOut is the usage of an exec_command result.
type usageOut struct {
	CPUMs     float64 `json:"cpuMs"`
	MaxRSSMb  float64 `json:"maxRssMb"`
	Processes int     `json:"processes"`
	WrittenMb float64 `json:"writtenMb"`
}

type limitOut struct {
	execOut
	Usage usageOut `json:"usage"`
}

func (s *session) limited(args map[string]any) limitOut {
	s.t.Helper()
	var o limitOut
	s.call("exec_command", args, &o)
	return o
}

// within reports whether got is within 20% of want.
func within(got, want float64) bool { return got >= want*0.8 && got <= want*1.2 }

// kernelProcessLimit reports whether this server's commands run in a pids cgroup of
// their own (root on cgroup v1), where forks past maxProcesses fail with EAGAIN.
func kernelProcessLimit(t *testing.T, s *session) bool {
	t.Helper()
	return commandCgroup(t, s, "pids")
}

// commandCgroup reports whether this server's commands run in a cgroup of their
// own of the v1 hierarchy that has controller ctl.
func commandCgroup(t *testing.T, s *session, ctl string) bool {
	t.Helper()
	o, _ := s.exec(map[string]any{"command": ownCgroupCmd})
	return hasOwnCgroup(o.Stdout, ctl)
}

// ownCgroupCmd prints what tells a command's own cgroups: /proc/self/cgroup,
// which names them by their host paths where the command has no view of its
// own (no private root), and the hierarchies of its view, which holds its own
// alone (syspaths.CgroupTree).
var ownCgroupCmd = []string{"sh", "-c", "cat /proc/self/cgroup; ls -d /sys/fs/cgroup/*/ 2>/dev/null; true"}

// hasOwnCgroup reports whether out, ownCgroupCmd's, shows a cgroup of the
// command's own in the v1 hierarchy with controller ctl.
func hasOwnCgroup(out, ctl string) bool {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ","+ctl+",") && strings.Contains(f[2], "/autobox-") {
			return true
		}
		if h, ok := strings.CutPrefix(l, "/sys/fs/cgroup/"); ok && strings.Contains(","+strings.TrimSuffix(h, "/")+",", ","+ctl+",") {
			return true
		}
	}
	return false
}

func needPerl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed: the fork probes are perl one-liners")
	}
}

// forks is a perl program that forks n children which sleep, and says which
// fork failed and why; the children are ended with the call.
func forks(n int) []string {
	return []string{"perl", "-e", fmt.Sprintf(`$| = 1; for $i (1..%d) { my $p = fork; if (!defined $p) { print "fork $i: $!\n"; exit 3 } if ($p == 0) { sleep 30; exit } } print "forked %d\n"`, n, n)}
}

// TestLimitProcesses: maxProcesses 10 lets a program fork 8 sleeping children,
// and refuses a fork past the limit with EAGAIN, which the program sees (it is
// not killed for one refusal).
func TestLimitProcesses(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	s := start(t)
	if !kernelProcessLimit(t, s) {
		t.Skip("commands have no pids cgroup here (it needs root on cgroup v1): maxProcesses is the watchdog's alone, which kills rather than refuses")
	}
	o := s.limited(map[string]any{"command": forks(8), "maxProcesses": 10, "timeoutMs": 10000})
	if o.Killed || o.code() != 0 || o.Stdout != "forked 8\n" {
		t.Errorf("8 children under maxProcesses 10: %+v", o)
	}
	if o.Usage.Processes < 9 || o.Usage.Processes > 10 {
		t.Errorf("8 children and their parent: usage.processes %d, want 9", o.Usage.Processes)
	}
	o = s.limited(map[string]any{"command": forks(12), "maxProcesses": 10, "timeoutMs": 10000})
	// The parent and 9 children are 10: the 10th fork is the first refused.
	if o.Killed || o.code() != 3 || o.Stdout != "fork 10: Resource temporarily unavailable\n" {
		t.Errorf("12 forks under maxProcesses 10: want the 10th refused with EAGAIN, got %+v", o)
	}
	// Threads count too.
	o = s.limited(map[string]any{"command": []string{"/mnt/tools/probe", "threads", "20"}, "mounts": []map[string]any{toolsMount()}, "maxProcesses": 10, "timeoutMs": 10000})
	if o.code() == 0 {
		t.Errorf("20 threads under maxProcesses 10: %+v", o)
	}
}

// TestLimitForkBomb: the classic bomb under the default limits ends as a
// process-limit kill, before its own sleep ends; calls made during the bomb
// and one after it are answered, and nothing of it is left (the harness
// checks that at the end). Nothing here is timed: the calls' times are logged,
// and each has a time limit far beyond what it needs, so that a busy machine
// slows them without failing them.
func TestLimitForkBomb(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		kernel := kernelProcessLimit(t, s)
		// Positive control: just under a small limit, nothing is refused or
		// killed. The 18 sleeps run until the shell ends them, 2 s after the
		// last one started, however long their starts took on a busy machine
		// (the usage is the watchdog's count where no cgroup counts, and it
		// must see them all at once); the shell waits in a builtin read, so
		// no 20th process.
		o := s.limited(map[string]any{"command": bash(`mkfifo gate && exec 3<>gate; pids=(); for i in $(seq 18); do sleep 300 & pids+=($!); done; read -t 2 <&3; kill "${pids[@]}"; wait; echo done`), "maxProcesses": 20, "timeoutMs": 30000})
		if o.Killed || o.Stdout != "done\n" || o.Stderr != "" || o.Usage.Processes != 19 {
			t.Errorf("18 sleeps under maxProcesses 20: %+v", o)
		}
		done := make(chan struct{})
		var bomb limitOut
		go func() {
			defer close(done)
			bomb = s.limited(map[string]any{"command": bash(`:(){ :|:& };:; sleep 25`), "timeoutMs": 30000})
		}()
		var took []time.Duration
		for len(took) == 0 || !isClosed(done) {
			t0 := time.Now()
			if p, _ := s.exec(map[string]any{"command": []string{"echo", "meanwhile"}, "timeoutMs": 30000}); p.Stdout != "meanwhile\n" {
				t.Errorf("a call during the bomb was not answered: %+v", p)
			}
			took = append(took, time.Since(t0))
		}
		slices.Sort(took)
		t.Logf("%d calls during the bomb, all answered: median %v, slowest %v", len(took), took[len(took)/2], took[len(took)-1])
		want := "process limit exceeded (maxProcesses 256 reached; the kernel refused "
		if !kernel {
			want = "process limit exceeded ("
		}
		if !bomb.Killed || !strings.HasPrefix(bomb.Stderr, want) {
			t.Errorf("fork bomb: want a process-limit kill (the command's own end, after its sleep, is not one), got killed=%v after %.0f ms, stderr %.300q", bomb.Killed, bomb.DurationMs, bomb.Stderr)
		}
		t.Logf("the bomb ended after %.0f ms, %d processes at most: %s", bomb.DurationMs, bomb.Usage.Processes, strings.SplitN(bomb.Stderr, "\n", 2)[0])
		if p, _ := s.exec(map[string]any{"command": []string{"echo", "after"}, "timeoutMs": 30000}); p.Stdout != "after\n" {
			t.Errorf("a call after the bomb: %+v", p)
		}
	})
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestLimitCPU: a spin past cpuMs is killed for it; a command that sleeps as long
// is not; a tree's processes count together.
func TestLimitCPU(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	s := start(t)
	spin := func(secs float64) []string {
		return []string{"perl", "-e", fmt.Sprintf(`while ((times)[0] + (times)[1] < %g) {}`, secs)}
	}
	o := s.limited(map[string]any{"command": spin(5), "cpuMs": 300, "timeoutMs": 10000})
	if !o.Killed || !strings.HasPrefix(o.Stderr, "cpu limit exceeded (") || !strings.Contains(o.Stderr, "> cpuMs 300; watchdog)") || o.Usage.CPUMs < 300 {
		t.Errorf("a spin past cpuMs 300: %+v", o)
	}
	// Same wall time, asleep: not killed.
	o = s.limited(map[string]any{"command": []string{"sleep", "0.6"}, "cpuMs": 300, "timeoutMs": 10000})
	if o.Killed || o.code() != 0 || o.Usage.CPUMs > 100 {
		t.Errorf("a sleep of the same wall time under cpuMs 300: %+v", o)
	}
	// Just under: 200 ms of CPU under cpuMs 300.
	o = s.limited(map[string]any{"command": spin(0.2), "cpuMs": 300, "timeoutMs": 10000})
	if o.Killed || o.code() != 0 {
		t.Errorf("200 ms of CPU under cpuMs 300: %+v", o)
	}
	// Four processes of 0.2 s each are 0.8 s of the tree's.
	o = s.limited(map[string]any{"command": bash(fmt.Sprintf(`for i in 1 2 3 4; do %s & done; wait`, strings.Join(quote(spin(0.2)), " "))), "cpuMs": 500, "timeoutMs": 10000})
	if !o.Killed || !strings.HasPrefix(o.Stderr, "cpu limit exceeded (") {
		t.Errorf("four processes of 200 ms under cpuMs 500: %+v", o)
	}
}

func quote(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// TestLimitOpenFiles: maxOpenFiles is each process's RLIMIT_NOFILE, soft and hard.
func TestLimitOpenFiles(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.limited(map[string]any{"command": bash("ulimit -Sn; ulimit -Hn")})
	if o.Stdout != "1024\n1024\n" {
		t.Errorf("default maxOpenFiles: %+v", o)
	}
	o = s.limited(map[string]any{"command": bash("ulimit -Sn; ulimit -Hn; ulimit -n 100 && echo raised"), "maxOpenFiles": 64})
	if !strings.HasPrefix(o.Stdout, "64\n64\n") || strings.Contains(o.Stdout, "raised") {
		t.Errorf("maxOpenFiles 64 (and no raising it): %+v", o)
	}
	// 60 files open at once under 64, 70 not.
	open := func(n int) []string {
		return bash(fmt.Sprintf(`for i in $(seq 3 %d); do eval "exec $i</dev/null" || { echo "fd $i refused"; exit 3; }; done; echo opened`, n+2))
	}
	if o = s.limited(map[string]any{"command": open(60), "maxOpenFiles": 64}); o.Stdout != "opened\n" {
		t.Errorf("60 files under maxOpenFiles 64: %+v", o)
	}
	if o = s.limited(map[string]any{"command": open(70), "maxOpenFiles": 64}); o.Stdout != "fd 64 refused\n" {
		t.Errorf("70 files under maxOpenFiles 64: %+v", o)
	}
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "maxOpenFiles": 8})
	if got := errorOf(res); !res.IsError || got != "invalid argument: maxOpenFiles must be between 64 and 65536, got 8" {
		t.Errorf("maxOpenFiles 8: %s", got)
	}
}

// TestLimitUsage: usage is within 20% of what the test knows the command used.
func TestLimitUsage(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	s := start(t)
	o := s.limited(map[string]any{"command": []string{"perl", "-e", `while ((times)[0] + (times)[1] < 0.5) {}`}, "timeoutMs": 10000})
	if !within(o.Usage.CPUMs, 500) {
		t.Errorf("500 ms of CPU: usage %+v", o.Usage)
	}
	o = s.limited(map[string]any{"command": []string{"/mnt/tools/probe", "hold", "100", "500"}, "mounts": []map[string]any{toolsMount()}, "timeoutMs": 10000})
	if !within(o.Usage.MaxRSSMb, 100) {
		t.Errorf("100 MB held for 0.5 s: usage %+v (%s)", o.Usage, o.Stderr)
	}
	// The sleeps outlast the slowest start of the 8 on a busy machine.
	o = s.limited(map[string]any{"command": bash("for i in $(seq 8); do sleep 3 & done; wait"), "timeoutMs": 30000})
	if o.Usage.Processes != 9 {
		t.Errorf("8 sleeps and their shell: usage %+v", o.Usage)
	}
	o = s.limited(map[string]any{"command": bash("dd if=/dev/zero of=f bs=1M count=30 status=none"), "timeoutMs": 10000})
	if !within(o.Usage.WrittenMb, 30) {
		t.Errorf("30 MB written: usage %+v", o.Usage)
	}
	// A refused call has a usage of zeros.
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "maxProcesses": 0})
	raw, _ := json.Marshal(res.StructuredContent)
	var refused limitOut
	json.Unmarshal(raw, &refused)
	if !res.IsError || refused.Usage != (usageOut{}) || !strings.Contains(errorOf(res), "maxProcesses must be between 1 and 4096, got 0") {
		t.Errorf("refused call: %s", raw)
	}
}

// TestLimitJSWorkerCPU: a JS worker's CPU time is capped (RLIMIT_CPU) at what it
// used before its call plus the call's time limit, rounded up to whole seconds.
func TestLimitJSWorkerCPU(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.callRaw("execute_js", map[string]any{"code": "while (true) {}", "timeoutMs": 2500})
	}()
	// Looked for while the call runs, however long a loaded machine takes to
	// start it.
	var limits []string
	for running := true; running && len(limits) == 0; time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			running = false
		default:
		}
		for _, pid := range descendants(s.cmd.Process.Pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(string(cmdline), "worker\x00js") && strings.HasPrefix(l, "Max cpu time") && !strings.Contains(l, "unlimited") {
					limits = append(limits, strings.Join(strings.Fields(l), " "))
				}
			}
		}
	}
	<-done
	if len(limits) != 1 || !strings.HasPrefix(limits[0], "Max cpu time 3 3 seconds") {
		t.Errorf("the busy worker's CPU limit: %q, want 3 seconds (2.5 s and what it used before, rounded up)", limits)
	}
}

// TestLimitOpenFilesWithProxy: the launcher shares its command's RLIMIT_NOFILE and
// accepts the command's connections for the proxy under it: at the smallest
// maxOpenFiles, twenty connections in a row through allowHosts all get through.
func TestLimitOpenFilesWithProxy(t *testing.T) {
	f := newNetFixture(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	url := fmt.Sprintf("http://web.test:%s/", f.webPort)
	o := f.run(t, f.hosts(), `for i in $(seq 20); do curl -sS `+url+` || exit 9; echo; done | sort | uniq -c`, map[string]any{"maxOpenFiles": 64})
	if o.code() != 0 || !strings.Contains(o.Stdout, "20 hello from web.test") {
		t.Errorf("20 connections through the proxy under maxOpenFiles 64: %+v", o)
	}
}

//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// The watchdog's holes (issue 20 item 6), each with the bound that holds in
// each mode: children the kernel reaps itself (their parent ignores SIGCHLD),
// whose figures per-process accounting loses once they are gone, and memory in
// memfds, which no process's resident memory shows until it is mapped. SECURITY.md
// ("What is not enforced") states these bounds.

// holeServers are servers in each mode this machine can make: this user's
// default, without namespaces (AUTOBOX_NO_NAMESPACES=1), and for an ordinary
// user under a filter that refuses user namespaces.
func holeServers(t *testing.T) map[string]*session {
	t.Helper()
	servers := map[string]*session{hostMode(): start(t), "no namespaces": startEnv(t, []string{jail.NoNamespacesEnv + "=1"})}
	if os.Geteuid() != 0 {
		servers["user namespaces refused"] = startNoUserNS(t, nil)
	}
	return servers
}

// hostCPUAcct reports whether this process is root on a host with a cgroup v1
// cpuacct hierarchy, where commands get a cpuacct cgroup each.
func hostCPUAcct() bool {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.SplitN(l, ":", 3); len(f) == 3 && strings.Contains(","+f[1]+",", ",cpuacct,") {
			return os.Geteuid() == 0
		}
	}
	return false
}

// autoReaped is a perl program that ignores SIGCHLD, so the kernel reaps its
// children, and then runs body in a child at a time, n times (0: forever).
func autoReaped(n int, body string) []string {
	return []string{"perl", "-e", fmt.Sprintf(`$| = 1; $SIG{CHLD} = "IGNORE";
		for ($i = 1; %d == 0 || $i <= %d; $i++) {
			my $p = fork; die "fork: $!" unless defined $p;
			if ($p == 0) { %s; exit 0 }
			select(undef, undef, undef, 0.01) while kill 0, $p;
		}
		print "done\n"`, n, n, body)}
}

// TestLimitAutoReapedCPU: a tree that spends its CPU time in children the
// kernel reaps, each too short for cpuMs alone, is ended by cpuMs: by the
// kernel's count where it counts the tree's CPU time (a cpuacct cgroup per
// command), elsewhere by the watchdog's, which keeps what it last saw of each
// such child (children shorter than one poll escape it: then the call's time
// limit, and RLIMIT_CPU per process, are the bound).
func TestLimitAutoReapedCPU(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	spin := `while ((times)[0] + (times)[1] < 0.2) {}`
	for mode, s := range holeServers(t) {
		t.Run(mode, func(t *testing.T) {
			// Positive control: 3 children of 0.2 s (0.6 s) under cpuMs 1000 run to the end.
			o := s.limited(map[string]any{"command": autoReaped(3, spin), "cpuMs": 1000, "timeoutMs": 20000})
			if o.Killed || o.Stdout != "done\n" {
				t.Fatalf("three auto-reaped children of 200 ms under cpuMs 1000: %+v", o)
			}
			kernel := commandCgroup(t, s, "cpuacct")
			if !kernel && hostCPUAcct() {
				t.Errorf("a root server on a host with a cgroup v1 cpuacct hierarchy: commands have no cpuacct cgroup")
				kernel = true
			}
			if kernel && o.Usage.CPUMs < 500 {
				t.Errorf("three auto-reaped children of 200 ms: usage.cpuMs %v, want the kernel's count (600)", o.Usage.CPUMs)
			}
			// Children of 0.2 s for ever under cpuMs 1000.
			o = s.limited(map[string]any{"command": autoReaped(0, spin), "cpuMs": 1000, "timeoutMs": 8000})
			if kernel {
				if !o.Killed || !strings.HasPrefix(o.Stderr, "cpu limit exceeded (") || o.Usage.CPUMs < 1000 {
					t.Errorf("auto-reaped children past cpuMs 1000, counted by the kernel: %+v", o)
				}
				return
			}
			// The watchdog keeps the last figures it saw of each child the kernel
			// reaped (children of 0.2 s live through many of its polls).
			if !o.Killed || !strings.HasPrefix(o.Stderr, "cpu limit exceeded (") {
				t.Errorf("auto-reaped children past cpuMs 1000: %+v", o)
			}
		})
	}
}

// TestLimitAutoReapedWrite: each file a child the kernel reaps writes is held
// to maxWriteMb by RLIMIT_FSIZE (the write past it fails with EFBIG), and the
// watchdog keeps what it last saw such children write once they are gone.
func TestLimitAutoReapedWrite(t *testing.T) {
	requireSandbox(t)
	needPerl(t)
	write := func(mb int) string {
		return fmt.Sprintf(`open(F, ">", "/mnt/out/f" . $i) or die "open: $!"; my $b = "x" x 1048576;
			for (1..%d) { unless (syswrite(F, $b)) { print "write: $!\n"; exit 1 } }
			close F; print "wrote %d MB\n"`, mb, mb)
	}
	for mode, s := range holeServers(t) {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			// A root server without namespaces runs commands as another uid.
			os.Chmod(filepath.Dir(dir), 0o755)
			os.Chmod(dir, 0o777)
			mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/out", "mode": "rw"}}
			// Positive control: 10 MB under maxWriteMb 20.
			o := s.limited(map[string]any{"command": autoReaped(1, write(10)), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 20000})
			if o.Killed || o.Stdout != "wrote 10 MB\ndone\n" {
				t.Fatalf("an auto-reaped child writing 10 MB under maxWriteMb 20: %+v", o)
			}
			// 40 MB into one file: the kernel stops it at 20.
			o = s.limited(map[string]any{"command": autoReaped(1, write(40)), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 20000})
			if !strings.Contains(o.Stdout, "write: File too large") {
				t.Errorf("an auto-reaped child writing 40 MB under maxWriteMb 20: %+v", o)
			}
			if size := fileSize(t, dir+"/f1"); size > 20<<20 {
				t.Errorf("an auto-reaped child's file: %d bytes, past maxWriteMb 20", size)
			}
			// Children of 9 MB each, each living through polls of the watchdog
			// after its writes (1 s: a loaded machine spaces the polls out to
			// five times what one takes, a quarter second and more), which
			// keeps what it last saw of them once they are gone: their sum
			// passes 20 with the third.
			slow := `open(F, ">", "/mnt/out/g" . $i) or die "open: $!"; my $b = "x" x 1048576;
				for (1..9) { syswrite(F, $b) or die "write: $!" } close F; select(undef, undef, undef, 1)`
			o = s.limited(map[string]any{"command": autoReaped(4, slow), "mounts": mounts, "maxWriteMb": 20, "timeoutMs": 20000})
			if !o.Killed || !strings.HasPrefix(o.Stderr, "disk limit exceeded (") {
				t.Errorf("auto-reaped children writing 4 x 9 MB under maxWriteMb 20: %+v", o)
			}
		})
	}
}

// TestLimitMemfd: memory held in a memfd that is never mapped counts against
// memoryMb in every mode: by the memory cgroup where there is one, else by the
// watchdog, which counts the memfds the tree's processes hold open.
func TestLimitMemfd(t *testing.T) {
	requireSandbox(t)
	for mode, s := range holeServers(t) {
		t.Run(mode, func(t *testing.T) {
			// Positive control: 16 MB under memoryMb 64.
			o := s.limited(map[string]any{"command": []string{"/mnt/tools/probe", "memfd", "16", "300"}, "mounts": []map[string]any{toolsMount()}, "memoryMb": 64, "timeoutMs": 10000})
			if o.Killed || o.Stdout != "ok memfd 16 MB\n" {
				t.Fatalf("a memfd of 16 MB under memoryMb 64: %+v", o)
			}
			o = s.limited(map[string]any{"command": []string{"/mnt/tools/probe", "memfd", "256", "3000"}, "mounts": []map[string]any{toolsMount()}, "memoryMb": 64, "timeoutMs": 10000})
			if !o.Killed || !strings.HasPrefix(o.Stderr, "memory limit exceeded") {
				t.Errorf("a memfd of 256 MB under memoryMb 64: %+v", o)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestDoctorLimitHoles: in each mode, doctor says what holds the tree's CPU
// time (the kernel's count, or the watchdog's sum with timeoutMs the bound for
// children the kernel reaps), as the mode's commands find it, and, without a
// memory cgroup, what the watchdog counts of memory and what it does not.
func TestDoctorLimitHoles(t *testing.T) {
	requireSandbox(t)
	doctors := map[string][]string{hostMode(): {bin, "doctor"}, "no namespaces": {"env", jail.NoNamespacesEnv + "=1", bin, "doctor"}}
	if os.Geteuid() != 0 {
		doctors["user namespaces refused"] = []string{filepath.Join(toolsDir, "probe"), "nouserns", bin, "doctor"}
	}
	servers := holeServers(t)
	for mode, argv := range doctors {
		t.Run(mode, func(t *testing.T) {
			out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			line := func(name string) string {
				for _, l := range strings.Split(string(out), "\n") {
					if f := strings.Fields(l); len(f) > 2 && strings.HasPrefix(strings.TrimSpace(l[len(f[0]):]), name+" ") {
						return l
					}
				}
				t.Fatalf("doctor has no %q line:\n%s", name, out)
				return ""
			}
			cpu := line("cpu limit")
			if commandCgroup(t, servers[mode], "cpuacct") {
				if !strings.Contains(cpu, "the tree's sum: kernel (a cpuacct cgroup per command") {
					t.Errorf("commands have a cpuacct cgroup; doctor: %s", cpu)
				}
			} else if !strings.Contains(cpu, "children the kernel reaps itself") || !strings.Contains(cpu, "the bound is timeoutMs") {
				t.Errorf("commands have no cpuacct cgroup; doctor: %s", cpu)
			}
			if w := line("write limit"); !strings.Contains(w, "each of their files is still held to maxWriteMb") {
				t.Errorf("doctor: %s", w)
			}
			if m := line("memory cgroup"); strings.Contains(m, "none") && !strings.Contains(m, "memfds a command holds open") {
				t.Errorf("doctor: %s", m)
			}
		})
	}
}

// TestLimitSocketBuffers: memory queued in unix socket pairs is in no process's
// resident memory. Where the call has a memory cgroup it is charged there and
// memoryMb holds; elsewhere the bound that holds is the descriptors
// (maxOpenFiles) times the most a socket may queue (twice net.core.wmem_max).
func TestLimitSocketBuffers(t *testing.T) {
	requireSandbox(t)
	b, err := os.ReadFile("/proc/sys/net/core/wmem_max")
	if err != nil {
		t.Skip("no net.core.wmem_max to bound a socket's buffer by:", err)
	}
	var wmemMax int64
	fmt.Sscan(string(b), &wmemMax)
	for mode, s := range holeServers(t) {
		t.Run(mode, func(t *testing.T) {
			o := s.limited(map[string]any{"command": []string{"/mnt/tools/probe", "sockfill"}, "mounts": []map[string]any{toolsMount()}, "memoryMb": 64, "maxOpenFiles": 64, "timeoutMs": 10000})
			if o.Killed {
				if !strings.HasPrefix(o.Stderr, "memory limit exceeded") {
					t.Errorf("socket buffers under memoryMb 64: %+v", o)
				}
				return
			}
			var queued, pairs int64
			if _, err := fmt.Sscanf(o.Stdout, "ok queued %d bytes in %d pairs", &queued, &pairs); err != nil || pairs == 0 {
				t.Fatalf("socket buffers: %+v", o)
			}
			t.Logf("no memory cgroup: %d MB queued in %d socket pairs under memoryMb 64 and maxOpenFiles 64", queued>>20, pairs)
			if bound := 64 * 2 * wmemMax; queued > bound {
				t.Errorf("%d bytes queued, more than maxOpenFiles 64 x 2 x net.core.wmem_max (%d)", queued, bound)
			}
		})
	}
}

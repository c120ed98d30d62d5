//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/jail"
)

// A command's view of its cgroups (syspaths.CgroupTree, jail's
// cgroupview_linux.go): its own cgroups alone, read-only, where runtimes look
// for their limits; nothing where it has none.

// cgroupProbe is the shell text that reads the command's limits the way
// runtimes find them (the JVM, libuv, Go): the cgroup /proc/self/cgroup names,
// below the mount of its hierarchy. It prints "memory <limit>" and "pids
// <pids.max>" (or the error), each cgroup line, and "dirs <n>": the
// directories below /sys/fs/cgroup's hierarchies, which in a view of its own
// cgroups are none.
const cgroupProbe = `
v2=$(sed -n 's/^0:://p' /proc/self/cgroup)
mem=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*://p' /proc/self/cgroup)
pids=$(sed -n 's/^[0-9]*:[^:]*pids[^:]*://p' /proc/self/cgroup)
if [ -n "$mem" ]; then memdir=/sys/fs/cgroup/memory$mem memfile=memory.limit_in_bytes; else memdir=/sys/fs/cgroup$v2 memfile=memory.max; fi
if [ -n "$pids" ]; then pidsdir=/sys/fs/cgroup/pids$pids; else pidsdir=/sys/fs/cgroup$v2; fi
echo "memory $(cat $memdir/$memfile 2>&1)"
echo "pids $(cat $pidsdir/pids.max 2>&1)"
sed 's/^/cgroup /' /proc/self/cgroup
echo "dirs $(find /sys/fs/cgroup -mindepth 2 -type d 2>/dev/null | wc -l)"
echo "named $(find /sys/fs/cgroup -name 'autobox-p*' 2>/dev/null | wc -l)"
`

// cgroupAttack is the shell text by which a command tries to raise its own
// limits or leave its cgroups: every write to a cgroup file it can name, a
// new cgroup, and the mounts it could undo. Each line says "<what> refused"
// or "<what> ALLOWED".
const cgroupAttack = cgroupProbe + `
try() { what=$1; shift; if "$@" 2>/dev/null; then echo "$what ALLOWED"; else echo "$what refused"; fi; }
try memory.max sh -c "echo 1099511627776 > $memdir/$memfile"
try pids.max sh -c "echo 100000 > $pidsdir/pids.max"
try cgroup.procs-own sh -c "echo $$ > $pidsdir/cgroup.procs"
try cgroup.procs-parent sh -c "echo $$ > $pidsdir/../cgroup.procs"
try cgroup.procs-root sh -c "echo $$ > /sys/fs/cgroup/pids/cgroup.procs"
try tasks-root sh -c "echo $$ > /sys/fs/cgroup/memory/tasks"
try subtree_control sh -c "echo +pids > /sys/fs/cgroup$v2/cgroup.subtree_control"
try mkdir-child mkdir $pidsdir/escape
try remount-rw mount -o remount,rw /sys/fs/cgroup/pids
try umount umount -l /sys/fs/cgroup/memory
try unshare-cgroupns unshare -C true
echo "after memory $(cat $memdir/$memfile 2>&1)"
echo "after pids $(cat $pidsdir/pids.max 2>&1)"
`

// probeLines maps the first word of each line of out to the rest.
func probeLines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(l, " ")
		if k == "after" || k == "cgroup" {
			k2, v2, _ := strings.Cut(v, " ")
			if k == "cgroup" {
				m[k] += v + "\n"
				continue
			}
			k, v = k+" "+k2, v2
		}
		m[k] = v
	}
	return m
}

// TestCommandCgroupView: a command with memoryMb and maxProcesses finds its own
// limits where runtimes look (memory.limit_in_bytes or memory.max: memoryMb
// and the launcher's 32 MB; pids.max: maxProcesses), where the server makes
// it cgroups (root here; an ordinary user with a delegated subtree:
// TestDelegatedCgroupV1); it can write none of them nor leave them; it lists
// no other cgroup (another call's, running beside it, and the host's, which
// the test itself sees: the control); and without cgroups of its own it sees
// nothing of /sys/fs/cgroup. In the host's mode and without namespaces.
func TestCommandCgroupView(t *testing.T) {
	requireSandbox(t)
	iso := jail.Isolations()
	own := iso.MemoryCgroups && iso.ProcessCgroups
	hostNamed := hostAutoboxCgroups
	for _, m := range []struct {
		name string
		env  []string
	}{{hostMode(), nil}, {"no-namespaces", []string{jail.NoNamespacesEnv + "=1"}}} {
		t.Run(m.name, func(t *testing.T) {
			s := startEnv(t, m.env)
			// Another call runs beside it the whole time, in cgroups of its own.
			gate := t.TempDir()
			// Writable by the commands' uid (65534 for a root server
			// without namespaces).
			os.Chmod(filepath.Dir(gate), 0o755)
			os.Chmod(gate, 0o777)
			other := make(chan execOut, 1)
			go func() {
				o, _ := s.exec(map[string]any{"command": bash("touch /mnt/g/started; until [ -e /mnt/g/open ]; do sleep 0.02; done"), "timeoutMs": 600000,
					"mounts": []map[string]any{{"hostPath": gate, "sandboxPath": "/mnt/g", "mode": "rw"}}})
				other <- o
			}()
			for {
				if _, err := os.Stat(filepath.Join(gate, "started")); err == nil {
					break
				}
				select {
				case o := <-other:
					t.Fatalf("the other call ended before it started: %+v", o)
				case <-time.After(20 * time.Millisecond):
				}
			}
			defer func() {
				writeFile(t, filepath.Join(gate, "open"), "")
				<-other
			}()
			const mb, procs = 200, 37
			o, _ := s.exec(map[string]any{"command": bash(cgroupAttack), "memoryMb": mb, "maxProcesses": procs, "timeoutMs": 60000})
			if o.code() != 0 {
				t.Fatalf("probe: %+v", o)
			}
			p := probeLines(o.Stdout)
			if !own {
				// Nothing to show: no file of /sys/fs/cgroup is readable.
				if !strings.Contains(p["memory"], "No such file") && !strings.Contains(p["memory"], "Permission denied") || !strings.Contains(p["pids"], "No such file") && !strings.Contains(p["pids"], "Permission denied") {
					t.Errorf("without cgroups of its own the command reads cgroup files:\n%s", o.Stdout)
				}
				t.Logf("no cgroups of its own here (%s): it sees nothing of /sys/fs/cgroup\n%s", m.name, o.Stdout)
				return
			}
			wantMem := strconv.Itoa((mb + 32) << 20)
			if p["memory"] != wantMem || p["pids"] != strconv.Itoa(procs) {
				t.Errorf("memoryMb %d, maxProcesses %d: the command reads memory %q (want %s), pids.max %q (want %d)\n%s", mb, procs, p["memory"], wantMem, p["pids"], procs, o.Stdout)
			}
			for _, w := range []string{"memory.max", "pids.max", "cgroup.procs-own", "cgroup.procs-parent", "cgroup.procs-root", "tasks-root", "subtree_control", "mkdir-child", "remount-rw", "umount", "unshare-cgroupns"} {
				if p[w] != "refused" {
					t.Errorf("%s: %q, want refused\n%s", w, p[w], o.Stdout)
				}
			}
			if p["after memory"] != wantMem || p["after pids"] != strconv.Itoa(procs) {
				t.Errorf("limits after the attempts: memory %q, pids %q", p["after memory"], p["after pids"])
			}
			// No other cgroup: none below its own, none named as autobox names
			// them (the other call's are, and the host sees them: the control).
			if p["dirs"] != "0" || p["named"] != "0" {
				t.Errorf("the command lists %s cgroup directories below its own, %s named autobox-p*:\n%s", p["dirs"], p["named"], o.Stdout)
			}
			if n := hostNamed(); n < 2 {
				t.Errorf("control: the test sees %d autobox cgroups on the host while two calls run", n)
			}
			if m.env == nil && namespaced() {
				// Its own cgroups are the roots of its view: no host path.
				for _, l := range strings.Split(strings.TrimSpace(p["cgroup"]), "\n") {
					if !strings.HasSuffix(l, ":/") {
						t.Errorf("/proc/self/cgroup names a path of the host: %q", l)
					}
				}
			}
		})
	}
}

// hostAutoboxCgroups counts the cgroups autobox made that the test process sees
// on the host, in the hierarchies it is in.
func hostAutoboxCgroups() int {
	b, _ := os.ReadFile("/proc/self/cgroup")
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || strings.HasPrefix(parts[1], "name=") {
			continue
		}
		base := filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
		if parts[1] == "" {
			base = filepath.Join(v2Mount(), parts[2])
		}
		found, _ := filepath.Glob(filepath.Join(base, "autobox-p*"))
		n += len(found)
	}
	return n
}

// TestCgroupViewRuntimes: real runtimes inside a call with memoryMb size their
// heaps from it (within twice its cgroup's limit) where the call has a memory cgroup of its own (Node's V8 heap
// limit, the JVM's MaxHeapSize), and from the host's memory where it has none,
// as they do bare (the control: bare, they size from the host's). CPUs are not
// limited per call (cpuMs is time, not a rate; cpu.max stays "max"), so nproc
// and Python's CPU count are the host's, inside as bare.
func TestCgroupViewRuntimes(t *testing.T) {
	requireSandbox(t)
	own := jail.Isolations().MemoryCgroups
	s := start(t)
	const mb = 200
	limit := int64(mb+32) << 20
	for _, r := range []struct {
		name, prog, script string
	}{
		{"node", "node", `node -e 'console.log(require("v8").getHeapStatistics().heap_size_limit)'`},
		{"java", "java", `java -XX:+PrintFlagsFinal -version 2>/dev/null | awk '$2 == "MaxHeapSize" { print $4 }'`},
	} {
		t.Run(r.name, func(t *testing.T) {
			if _, err := exec.LookPath(r.prog); err != nil {
				t.Skipf("%s is not installed", r.prog)
			}
			bare, err := exec.Command("/bin/bash", "-c", r.script).Output()
			if err != nil {
				t.Fatalf("bare: %v", err)
			}
			o, _ := s.exec(map[string]any{"command": bash(r.script), "memoryMb": mb, "timeoutMs": 60000})
			in, err1 := strconv.ParseInt(strings.TrimSpace(o.Stdout), 10, 64)
			out, err2 := strconv.ParseInt(strings.TrimSpace(string(bare)), 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("inside %+v, bare %q", o, bare)
			}
			// Sized from the limit: within twice the cgroup's (V8 has a
			// floor of its own above a small limit); from the host's memory:
			// more, bare.
			switch {
			case out <= 2*limit:
				t.Skipf("bare, %s sizes its heap to %d bytes, within twice the limit already: nothing to tell apart", r.name, out)
			case own && in > 2*limit:
				t.Errorf("memoryMb %d with a memory cgroup of its own: %s sizes its heap to %d bytes (bare: %d)", mb, r.name, in, out)
			case !own && in != out:
				t.Errorf("without a memory cgroup of its own %s sizes its heap to %d bytes, bare %d", r.name, in, out)
			}
			t.Logf("%s heap: %d MB inside (memoryMb %d, own memory cgroup %v), %d MB bare", r.name, in>>20, mb, own, out>>20)
		})
	}
	o, _ := s.exec(map[string]any{"command": bash(`nproc; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu.max 2>/dev/null; true`), "timeoutMs": 60000})
	if fields := strings.Fields(o.Stdout); len(fields) == 0 || fields[0] != fmt.Sprint(nproc()) {
		t.Errorf("nproc inside %q, want the host's %d (no CPU rate limit per call)", o.Stdout, nproc())
	} else if len(fields) > 1 && fields[1] != "-1" && fields[1] != "max" {
		t.Errorf("a CPU quota inside: %q", o.Stdout)
	}
}

// nproc is the CPUs this process may run on, as nproc(1) counts them.
func nproc() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

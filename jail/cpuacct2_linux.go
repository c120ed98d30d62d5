package jail

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
)

// The CPU time of a command's whole tree where cgroup v2 is the way to count it.
// Per-process figures lose the children the kernel reaps itself (their parent
// ignores SIGCHLD or sets SA_NOCLDWAIT): their CPU time goes to no one's, and a
// tree of children shorter than the watchdog's poll passes cpuMs unseen. A
// cgroup's count does not lose them: cpu.stat's usage_usec, which cgroup v2 keeps
// in every cgroup, with no controller enabled, is the CPU time of every task that
// was ever in it. Where no cgroup v1 cpuacct hierarchy gives each command a
// cgroup of its own (cpuacct_linux.go), and this process may make cgroups in the
// v2 hierarchy below its own (root on a cgroup v2 or hybrid host, or an ordinary
// user whose session has a delegated subtree, as systemd gives user@.service),
// each launcher joins a v2 cgroup of its own while it waits in the pool (or
// already has one: its memory cgroup, on v2), and its command's tree is born in
// it.
//
// A v2 cgroup holds processes, not threads, so the launcher is in it too: the
// tree's time is the cgroup's count less the launcher's own CPU time since it
// joined, which /proc/<launcher>/stat gives (in clock ticks, 10 ms). After the
// launcher has exited, the launcher's time after the last reading is counted
// as the tree's: milliseconds. No command can leave the cgroup: that needs write
// access to cgroup files, which no command has.

// userHZ is the unit of /proc/<pid>/stat's times (100 on every Linux ABI).
const userHZ = 100

// acctCgroups is the v2 directory this process makes launchers' accounting
// cgroups in; nil where it cannot, or need not (cgroup v1 cpuacct).
type acctCgroups struct{ base string }

var probeAcctCgroups = sync.OnceValue(func() *acctCgroups {
	if c := probeCmdCgroups(); c != nil && c.acct != "" {
		return nil // each command has a cpuacct cgroup of its own: an exact count
	}
	base := ownV2Cgroup()
	if base == "" {
		return nil
	}
	probe := filepath.Join(base, "autobox-probe-"+strconv.Itoa(os.Getpid()))
	if os.Mkdir(probe, 0o755) != nil {
		return nil
	}
	_, err := os.Stat(filepath.Join(probe, "cpu.stat"))
	os.Remove(probe)
	// Moving the launcher in writes cgroup.procs of the common ancestor too.
	if f, werr := os.OpenFile(filepath.Join(base, "cgroup.procs"), os.O_WRONLY, 0); werr == nil {
		f.Close()
	} else {
		err = werr
	}
	if err != nil {
		return nil
	}
	sweepStaleCgroups(base, killCgroupProcs)
	return &acctCgroups{base: base}
})

// ownV2Cgroup is the directory of this process's cgroup in the v2 hierarchy,
// mounted at /sys/fs/cgroup (v2 hosts) or /sys/fs/cgroup/unified (hybrid ones);
// "" without one.
func ownV2Cgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	path := ""
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			path = p
		}
	}
	if path == "" {
		return ""
	}
	for _, m := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if unix.Statfs(m, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return filepath.Join(m, path)
		}
	}
	return ""
}

// acctCgroup is one launcher's v2 cgroup, counted for its tree.
type acctCgroup struct {
	dir   string   // made for it, removed after it; "" when it is the memory cgroup
	usage *os.File // cpu.stat
	self  *os.File // /proc/<launcher>/stat
	// at is the launcher's own CPU time (ticks) when it joined, last the most
	// recent reading while it lived.
	at   int64
	last atomic.Int64
}

// newAcctCgroup gives the launcher pid a v2 cgroup to count its tree in: its
// memory cgroup where that is v2, else one of its own where this process may
// make one; nil where neither.
func newAcctCgroup(cg *memCgroup, pid int) *acctCgroup {
	g := &acctCgroup{}
	switch a := probeAcctCgroups(); {
	case probeCmdCgroups() != nil && probeCmdCgroups().acct != "":
		return nil // cgroup v1 cpuacct: the command's own (cpuacct_linux.go)
	case cg != nil && cg.v2:
		g.usage, _ = os.Open(filepath.Join(cg.dir, "cpu.stat"))
	case a != nil:
		g.dir = filepath.Join(a.base, cgroupName())
		if os.Mkdir(g.dir, 0o755) != nil {
			return nil
		}
		if os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0) != nil {
			g.remove()
			return nil
		}
		g.usage, _ = os.Open(filepath.Join(g.dir, "cpu.stat"))
	default:
		return nil
	}
	g.self, _ = os.Open("/proc/" + strconv.Itoa(pid) + "/stat")
	if g.usage == nil || g.self == nil {
		g.remove()
		return nil
	}
	var ok bool
	if g.at, ok = g.ownTicks(); !ok {
		g.remove()
		return nil
	}
	g.last.Store(g.at)
	return g
}

// ownTicks is the launcher's own CPU time in clock ticks, its threads' alone
// (not its reaped children's).
func (g *acctCgroup) ownTicks() (int64, bool) {
	var buf [1024]byte
	n, _ := g.self.ReadAt(buf[:], 0)
	if n == 0 {
		return 0, false // reaped
	}
	b := buf[:n]
	i := bytes.LastIndexByte(b, ')') // "pid (comm) S ...": comm may hold anything
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64) // utime, field 14 of proc(5)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64) // stime, field 15
	return utime + stime, err1 == nil && err2 == nil
}

// cpuTime is the CPU time of the launcher's tree: every task that was in the
// cgroup, less the launcher's own since it joined; false without a cgroup.
func (g *acctCgroup) cpuTime() (time.Duration, bool) {
	if g == nil {
		return 0, false
	}
	if own, ok := g.ownTicks(); ok && own > g.last.Load() {
		g.last.Store(own) // the launcher lives: its time so far
	}
	var buf [512]byte
	n, _ := g.usage.ReadAt(buf[:], 0)
	usage := time.Duration(procfs.LineValue(buf[:n], "usage_usec ")) * time.Microsecond
	launcher := time.Duration(g.last.Load()-g.at) * time.Second / userHZ
	return max(0, usage-launcher), true
}

// remove closes the cgroup's files and deletes it if it was made for the
// launcher, once the launcher has been reaped.
func (g *acctCgroup) remove() {
	if g == nil {
		return
	}
	for _, f := range []*os.File{g.usage, g.self} {
		if f != nil {
			f.Close()
		}
	}
	if g.dir != "" {
		removeCgroupDir(g.dir)
	}
}

// acctHolder holds a tree's acctCgroup: set after the launcher's fork, removed
// after its reaping, which may come first (a launcher that died at once).
type acctHolder struct {
	mu     sync.Mutex
	g      *acctCgroup
	closed bool
}

// setAcct gives the tree its accounting cgroup (may be nil).
func (t *Tree) setAcct(g *acctCgroup) {
	t.acct.mu.Lock()
	defer t.acct.mu.Unlock()
	if t.acct.closed {
		g.remove()
		return
	}
	t.acct.g = g
}

// cpuTime is the tree's CPU time by its accounting cgroup; false without one.
func (h *acctHolder) cpuTime() (time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.g.cpuTime()
}

// close removes the cgroup, once the launcher has been reaped.
func (h *acctHolder) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.g.remove()
	h.g, h.closed = nil, true
}

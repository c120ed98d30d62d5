package jail

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/autobox-dev/autobox/internal/procfs"
)

// A Pool puts each launcher in a memory cgroup of its own, below this process's own,
// and Start gives it a hard limit: the kernel's backstop behind the supervisor's RSS
// watchdog (which polls, and can be outrun by a fast allocator). It is done where the
// host lets this process create cgroups (root on cgroup v1, or a delegated cgroup v2
// subtree); elsewhere the watchdog alone enforces the limit.
//
// The launcher joins its cgroup while it waits in the pool: moving a process between
// cgroups waits for an RCU grace period (milliseconds), and a call should not. On
// cgroup v1 only the launcher's command thread joins (writing 0 to the cgroup's
// tasks file, which the supervisor opens for it, as for the command's own cgroups,
// cmdcgroup_linux.go): a thread that moves itself takes no lock that waits for a
// grace period (10-12 ms on some hosts, which `autobox exec`, whose launcher starts
// with the call, would pay). The command it forks is born in the cgroup, and the
// launcher itself stays out of its command's limit; the kernel charges memory to
// the cgroup of the process that owns it, so the command's is all there. cgroup v2
// puts a process's threads in one cgroup: there the supervisor moves the launcher.
type memCgroups struct {
	base  string // directory new cgroups go in
	v2    bool
	limit string // file that takes the limit in bytes
}

// cgroupSlack is what the launcher itself may use beyond the command's limit; it is
// also the limit of an idle launcher.
const cgroupSlack = 32 << 20

var probeCgroups = sync.OnceValue(func() *memCgroups {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	defer f.Close()
	var candidates []*memCgroups
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && parts[0] == "0":
			candidates = append(candidates, &memCgroups{base: filepath.Join("/sys/fs/cgroup", parts[2]), v2: true, limit: "memory.max"})
		case strings.Contains(","+parts[1]+",", ",memory,"):
			candidates = append(candidates, &memCgroups{base: filepath.Join("/sys/fs/cgroup/memory", parts[2]), limit: "memory.limit_in_bytes"})
		}
	}
	for _, c := range candidates {
		if c.v2 {
			b, err := os.ReadFile(filepath.Join(c.base, "cgroup.subtree_control"))
			if err != nil || !strings.Contains(string(b), "memory") {
				continue
			}
		}
		probe := filepath.Join(c.base, "autobox-probe-"+uuid.NewString())
		if os.Mkdir(probe, 0o755) != nil {
			continue
		}
		_, err := os.Stat(filepath.Join(probe, c.limit))
		os.Remove(probe)
		if err == nil {
			c.sweepStale()
			return c
		}
	}
	return nil
})

// sweepStale removes the cgroups that autobox processes which are gone left in
// base (a server killed with SIGKILL cannot remove its own), killing whatever
// still runs in them first: nothing autobox makes may outlive it.
func (c *memCgroups) sweepStale() {
	sweepStaleCgroups(c.base, func(dir string) {
		g := &memCgroup{memCgroups: c, dir: dir}
		g.kill()
	})
}

// memCgroup is one launcher's cgroup.
type memCgroup struct {
	*memCgroups
	dir      string
	memory   int64 // what the limit is set for, as setLimit takes it, if limitSet
	limitSet bool
	events   *os.File // the file that counts OOM kills, opened ahead of the call
	stat     *os.File // memory.stat, for the tmpfs pages the tree wrote (see shmem)
	// tasks is the v1 cgroup's tasks file, for the launcher's command thread
	// to join by (see memCgroups); nil on v2, and once handed over.
	tasks *os.File
}

// create makes a cgroup for an idle launcher, limited as for a command of memory bytes
// (see setLimit; -1: to cgroupSlack alone), so that a call with the same limit need
// not set it; nil when the host offers no cgroups to this process (or this one
// could not be made: the watchdog still guards).
func (c *memCgroups) create(memory int64) *memCgroup {
	if c == nil {
		return nil
	}
	g := &memCgroup{memCgroups: c, dir: filepath.Join(c.base, cgroupName())}
	if os.Mkdir(g.dir, 0o755) != nil {
		return nil
	}
	events := "memory.oom_control"
	if c.v2 {
		events = "memory.events"
	}
	var err error
	g.stat, _ = os.Open(filepath.Join(g.dir, "memory.stat"))
	if g.events, err = os.Open(filepath.Join(g.dir, events)); err != nil || g.setLimit(memory) != nil {
		g.remove()
		return nil
	}
	if !c.v2 {
		if g.tasks, err = os.OpenFile(filepath.Join(g.dir, "tasks"), os.O_WRONLY, 0); err != nil {
			g.remove()
			return nil
		}
	}
	return g
}

// statFile is the cgroup's memory.stat, which the launcher reads too (see
// Tree.Shmem); nil without one.
func (g *memCgroup) statFile() *os.File {
	if g == nil {
		return nil
	}
	return g.stat
}

// threadJoin is the file the launcher's command thread joins the cgroup by (see
// memCgroups), or nil where the supervisor moves the launcher (join).
func (g *memCgroup) threadJoin() *os.File {
	if g == nil {
		return nil
	}
	return g.tasks
}

// handedOver closes this process's copy of the tasks file once the launcher
// has its own.
func (g *memCgroup) handedOver() {
	if g != nil && g.tasks != nil {
		g.tasks.Close()
		g.tasks = nil
	}
}

// join moves pid and all its threads into the cgroup (cgroup v2).
func (g *memCgroup) join(pid int) error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("%w: joining the memory cgroup: %w", ErrSandbox, err)
	}
	return nil
}

// setLimit limits the cgroup to memory bytes plus the launcher's slack; memory 0
// lifts the limit, and memory -1 leaves only the slack (an idle launcher's limit).
func (g *memCgroup) setLimit(memory int64) error {
	if memory < -1 {
		return fmt.Errorf("%w: memory limit %d", ErrPolicy, memory)
	}
	if g.limitSet && memory == g.memory {
		return nil
	}
	limit := strconv.FormatInt(max(memory, 0)+cgroupSlack, 10)
	switch {
	case memory != 0:
	case g.v2:
		limit = "max"
	default:
		limit = "-1"
	}
	if err := os.WriteFile(filepath.Join(g.dir, g.limit), []byte(limit), 0); err != nil {
		g.limitSet = false
		return fmt.Errorf("%w: setting the memory cgroup's limit: %w", ErrSandbox, err)
	}
	g.memory, g.limitSet = memory, true
	return nil
}

// oomKills is how many processes the kernel's OOM killer ended in the cgroup (0
// without one).
func (g *memCgroup) oomKills() int {
	if g == nil {
		return 0
	}
	var buf [512]byte
	n, _ := g.events.ReadAt(buf[:], 0)
	for _, l := range strings.Split(string(buf[:n]), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "oom_kill" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

// shmem is the bytes of tmpfs and shared memory charged to the cgroup: what the
// tree wrote to tmpfs files (which the kernel's per-process write accounting does
// not count) and still holds there. 0 without a cgroup.
func (g *memCgroup) shmem() int64 {
	if g == nil || g.stat == nil {
		return 0
	}
	var buf [4096]byte
	n, _ := g.stat.ReadAt(buf[:], 0)
	return procfs.LineValue(buf[:n], "shmem ")
}

// remove deletes the cgroup once its launcher has been reaped.
func (g *memCgroup) remove() {
	g.handedOver()
	if g.events != nil {
		g.events.Close()
	}
	if g.stat != nil {
		g.stat.Close()
	}
	removeCgroupDir(g.dir)
}

// removeCgroupDir deletes a cgroup whose processes are gone. The kernel may take
// a moment to let go of processes that just died: it retries for a while.
func removeCgroupDir(dir string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "autobox: could not remove cgroup %s\n", dir)
}

// kill SIGKILLs every process in the cgroup: with cgroup.kill on v2 (Linux
// 5.14), else as killCgroupProcs does. g may be nil.
func (g *memCgroup) kill() {
	if g == nil {
		return
	}
	if g.v2 && os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	killCgroupProcs(g.dir)
}

// killCgroupProcs SIGKILLs the processes in the cgroup dir by reading
// cgroup.procs and killing what it lists, round after round, until it lists
// nothing (a process cannot leave its cgroup: that needs write access to
// cgroup files, which no command has).
func killCgroupProcs(dir string) {
	procs := filepath.Join(dir, "cgroup.procs")
	for i := 0; i < sweepRounds; i++ {
		b, err := os.ReadFile(procs)
		if err != nil {
			return
		}
		live := 0
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				live++
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if live == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

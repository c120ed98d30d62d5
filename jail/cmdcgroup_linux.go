package jail

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/policy"
)

// A command's own cgroups, beside its launcher's memory cgroup (cgroup_linux.go):
// one in the pids hierarchy, whose pids.max is the call's maxProcesses, and one in
// the cpu hierarchy, so that the kernel's scheduler gives each call the same share
// (the default weight, cpu.shares 1024) however many processes it runs: two busy
// calls split the machine, and a fork bomb gets one call's share.
//
// Only the command's tree is in them, never its launcher. The launcher is a Go
// program: at a full pids.max a thread it needs could not be created, and the Go
// runtime dies when that happens. On cgroup v1 a cgroup holds threads, not
// processes, so the launcher's command thread alone joins the command's
// cgroups (writing 0 to their tasks files, which the supervisor opened for it),
// while it waits for its call; the command it forks is born in them, and once
// the thread exits only the command's tree is left. A thread moves in tens of
// microseconds (a process, all its threads, in milliseconds).
//
// pids.max counts the command thread until it exits: it is maxProcesses + 1
// when the command is forked, and the command thread itself lowers it to
// maxProcesses right after the fork (the launcher gets pids.max too), before
// the command has run a single instruction of its program; until the thread is
// gone, a moment later, the tree is held one below its limit.
//
// cgroup v2 puts a process's threads in one cgroup (a threaded subtree would
// be needed), so there the command has no cgroups of its own: the watchdog
// counts its processes, and the launcher's memory cgroup is the command's CPU
// share where the cpu controller is enabled for it.
type cmdCgroups struct {
	pids, cpu string // base directories in the v1 hierarchies, "" where there is none
	// acct is the cpuacct hierarchy's base (cpuacct_linux.go): the same as cpu
	// where the two are mounted together.
	acct string
	// cpuset is the cpuset hierarchy's base: a cgroup there with the server's
	// CPUs, for the command's view of its cgroups (cgroupview_linux.go).
	cpuset string
}

var probeCmdCgroups = sync.OnceValue(func() *cmdCgroups {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	c := &cmdCgroups{}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue // cgroup v2, or a named hierarchy without controllers
		}
		base := filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
		for _, ctl := range strings.Split(parts[1], ",") {
			switch {
			case ctl == "pids" && c.pids == "" && usableBase(base, "pids.max"):
				c.pids = base
			case ctl == "cpu" && c.cpu == "" && usableBase(base, "cpu.shares"):
				c.cpu = base
			case ctl == "cpuacct" && c.acct == "" && usableBase(base, "cpuacct.usage"):
				c.acct = base
			case ctl == "cpuset" && c.cpuset == "" && usableBase(base, "cpuset.cpus"):
				c.cpuset = base
			}
		}
	}
	if c.pids == "" && c.cpu == "" && c.acct == "" {
		return nil
	}
	for _, base := range c.bases() {
		if base != "" {
			sweepStaleCgroups(base, killCgroupProcs)
		}
	}
	return c
})

// usableBase reports whether this process may make cgroups in base that have
// the control file want.
func usableBase(base, want string) bool {
	probe := filepath.Join(base, "autobox-probe-"+strconv.Itoa(os.Getpid()))
	if os.Mkdir(probe, 0o755) != nil {
		return false
	}
	defer os.Remove(probe)
	_, err := os.Stat(filepath.Join(probe, want))
	return err == nil
}

// cmdCgroup is one launcher's command cgroups.
type cmdCgroup struct {
	dirs    []string   // made; removed once the launcher is reaped
	tasks   []*os.File // their tasks files, for the launcher (closed once it has them)
	pidsMax *os.File   // nil without a pids cgroup
	events  *os.File   // pids.events: forks refused at pids.max
	peak    *os.File   // pids.peak (Linux 6.10), or nil
	usage   *os.File   // cpuacct.usage, or nil
	max     int        // pids.max as last set (0: "max")
}

// create makes the cgroups of one launcher; nil where there are none (or they
// could not be made: the watchdog still counts).
func (c *cmdCgroups) create() *cmdCgroup {
	if c == nil {
		return nil
	}
	g := &cmdCgroup{}
	name := cgroupName()
	for _, base := range c.bases() {
		if base == "" {
			continue
		}
		dir := filepath.Join(base, name)
		if os.Mkdir(dir, 0o755) != nil {
			g.remove()
			return nil
		}
		if base == c.cpuset && !inheritCpuset(base, dir) { // cgroupview_linux.go
			removeCgroupDir(dir)
			continue
		}
		g.dirs = append(g.dirs, dir)
		tasks, err := os.OpenFile(filepath.Join(dir, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			g.remove()
			return nil
		}
		g.tasks = append(g.tasks, tasks)
		if base == c.acct {
			g.usage, _ = os.Open(filepath.Join(dir, "cpuacct.usage"))
		}
		if base != c.pids {
			continue
		}
		var err1, err2 error
		g.pidsMax, err1 = os.OpenFile(filepath.Join(dir, "pids.max"), os.O_WRONLY, 0)
		g.events, err2 = os.Open(filepath.Join(dir, "pids.events"))
		g.peak, _ = os.Open(filepath.Join(dir, "pids.peak"))
		if err1 != nil || err2 != nil {
			g.remove()
			return nil
		}
	}
	return g
}

// files are the task files a launcher gets from fd 5 up, then pids.max if there
// is a pids cgroup (launcherPidsMaxEnv); nil without cgroups.
func (g *cmdCgroup) files() []*os.File {
	if g == nil {
		return nil
	}
	if g.pidsMax != nil {
		return append(g.tasks[:len(g.tasks):len(g.tasks)], g.pidsMax)
	}
	return g.tasks
}

// handedOver closes this process's copies of the task files once the launcher
// has its own.
func (g *cmdCgroup) handedOver() {
	if g == nil {
		return
	}
	for _, f := range g.tasks {
		f.Close()
	}
	g.tasks = nil
}

// setMax sets pids.max for a command of l: its Processes and the command thread
// that forks it (see cmdCgroups); no limit without one.
func (g *cmdCgroup) setMax(l *policy.Limits) error {
	if g == nil || g.pidsMax == nil {
		return nil
	}
	n := 0
	if l != nil && l.Processes > 0 {
		n = l.Processes + 1
	}
	return g.writeMax(n)
}

func (g *cmdCgroup) writeMax(n int) error {
	v := "max"
	if n > 0 {
		v = strconv.Itoa(n)
	}
	if _, err := g.pidsMax.WriteAt([]byte(v), 0); err != nil {
		return errors.Join(ErrSandbox, err)
	}
	g.max = n
	return nil
}

// forksRefused is how many forks of the tree pids.max refused (0 without a pids
// cgroup).
func (g *cmdCgroup) forksRefused() int {
	if g == nil {
		return 0
	}
	return readCount(g.events, "max ")
}

// peakTasks is the most tasks of the tree the pids cgroup held at once; 0 where
// the kernel keeps no peak. The command thread was one of them while it forked
// the command, and exits microseconds later, long before a command (exec'd,
// loaded, started) forks: a peak of 2 is the thread and the command, a higher
// one the tree's own.
func (g *cmdCgroup) peakTasks() int {
	if g == nil {
		return 0
	}
	v := readCount(g.peak, "")
	if v > 2 {
		return v
	}
	return min(v, 1)
}

// readCount reads a cgroup file that holds one number after prefix; 0 if f is nil.
func readCount(f *os.File, prefix string) int {
	if f == nil {
		return 0
	}
	var buf [64]byte
	n, _ := f.ReadAt(buf[:], 0)
	v, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), prefix)))
	return v
}

// kill SIGKILLs every process of the command's cgroups (see killCgroupProcs).
func (g *cmdCgroup) kill() {
	if g == nil {
		return
	}
	for _, dir := range g.dirs {
		killCgroupProcs(dir)
	}
}

// remove deletes the cgroups once the launcher has been reaped.
func (g *cmdCgroup) remove() {
	if g == nil {
		return
	}
	g.handedOver()
	for _, f := range []*os.File{g.pidsMax, g.events, g.peak, g.usage} {
		if f != nil {
			f.Close()
		}
	}
	for _, dir := range g.dirs {
		removeCgroupDir(dir)
	}
}

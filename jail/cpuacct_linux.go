package jail

import (
	"strconv"
	"strings"
	"time"
)

// The CPU time of a command's whole tree as the kernel counts it: a cgroup of
// the v1 cpuacct hierarchy per command (beside its pids and cpu cgroups, joined
// the same way, see cmdCgroups), whose cpuacct.usage is the CPU time of every
// task that was ever in it. Per-process accounting cannot give that sum: a
// child whose parent ignores SIGCHLD (or sets SA_NOCLDWAIT) is reaped by the
// kernel, and its CPU time is added to no one's, so a tree of short-lived such
// children could spend any CPU time beyond the watchdog's sum of /proc figures
// (RLIMIT_CPU still bounds each process). With this cgroup the watchdog holds
// the tree to cpuMs by the kernel's count.
//
// Only the tree is in the cgroup: the launcher's command thread joins it to
// fork the command and exits right after (microseconds of its own CPU time).

// bases are the hierarchies a command gets a cgroup in, each once.
func (c *cmdCgroups) bases() []string {
	b := []string{c.pids, c.cpu}
	if c.acct != c.cpu {
		b = append(b, c.acct)
	}
	return append(b, c.cpuset)
}

// cpuTime is the CPU time of every task that was in the command's cgroup;
// false without a cpuacct cgroup.
func (g *cmdCgroup) cpuTime() (time.Duration, bool) {
	if g == nil || g.usage == nil {
		return 0, false
	}
	var buf [32]byte
	n, _ := g.usage.ReadAt(buf[:], 0)
	ns, err := strconv.ParseInt(strings.TrimSpace(string(buf[:n])), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}

// KernelCPU is the CPU time of the whole tree, every process it ever had
// included, as the kernel counted it (a cpuacct cgroup of its own); false where
// the kernel keeps no such count for it. Safe to call at any time; after Wait,
// the count at the end.
func (t *Tree) KernelCPU() (time.Duration, bool) {
	select {
	case <-t.finished:
		return t.ended.cpu, t.ended.hasCPU
	default:
		return t.treeCPU()
	}
}

// treeCPU is the tree's CPU time as a cgroup counts it: the command's cgroup v1
// cpuacct, else the launcher's v2 cgroup (cpuacct2_linux.go); false without.
func (t *Tree) treeCPU() (time.Duration, bool) {
	if d, ok := t.cmdcg.cpuTime(); ok {
		return d, true
	}
	return t.acct.cpuTime()
}

// CPUAccounting says how the kernel counts each command's tree's CPU time,
// which the watchdog holds cpuMs to: "cpuacct" (a cgroup v1 cpuacct cgroup of
// its own), "v2" (its launcher's cgroup v2, cpuacct2_linux.go), or "" where it
// does not.
func CPUAccounting() string {
	c := probeCmdCgroups()
	switch {
	case c != nil && c.acct != "":
		return "cpuacct"
	case probeAcctCgroups() != nil || probeCgroups() != nil && probeCgroups().v2:
		return "v2"
	}
	return ""
}

// MemoryCgroup reports whether the tree's memory is charged to a memory cgroup
// of its own (then every page it holds counts against its limit, memfds and
// tmpfs files included); else the watchdog counts what it can see.
func (t *Tree) MemoryCgroup() bool { return t.cgroup != nil }

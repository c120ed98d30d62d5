package jail

import (
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"golang.org/x/sys/unix"
)

// What a Tree tells the supervisor's watchdog and its result about the limits of
// policy.Limits, beyond what /proc shows.

// endFigures are what the tree's cgroups held when the launcher reported its end
// (they are removed soon after).
type endFigures struct {
	shmem     int64
	peakTasks int
	refused   int
	cpu       time.Duration // cpuacct's count, where hasCPU
	hasCPU    bool
}

func (t *Tree) endFigures() endFigures {
	e := endFigures{shmem: t.Shmem(), peakTasks: t.cmdcg.peakTasks(), refused: t.cmdcg.forksRefused()}
	e.cpu, e.hasCPU = t.treeCPU()
	return e
}

// ForksRefused is how many forks of the tree the kernel refused at its process
// limit so far (0 where the command has no pids cgroup). Safe to call at any
// time; after Wait, the count at the end.
func (t *Tree) ForksRefused() int {
	if t.nproc || t.nprocLimit.Load() > 0 {
		return -1 // RLIMIT_NPROC refuses them, uncounted
	}
	select {
	case <-t.finished:
		return t.ended.refused
	default:
		return t.cmdcg.forksRefused()
	}
}

// KernelProcessLimit reports whether the kernel holds the tree to its
// Limits.Processes (a pids cgroup of its own); else only the watchdog does.
func (t *Tree) KernelProcessLimit() bool { return t.cmdcg != nil && t.cmdcg.pidsMax != nil || t.nproc }

// Shmem is the bytes of tmpfs files and shared memory the tree's command came to
// hold since it started, as its memory cgroup counts them (0 without one, and
// before the start): writes to tmpfs, which the kernel's per-process write
// accounting misses. What the launcher placed in the private root before (its
// passwd, hosts, the /dev links) is not the command's. Safe to call at any time.
func (t *Tree) Shmem() int64 {
	base := t.shmemBase.Load()
	if base == 0 {
		return 0
	}
	return max(0, t.cgroup.shmem()-(base-1))
}

// IPC is the memory the System V objects of the tree's IPC namespace hold, as
// its launcher last reported it (jail/launcher/ipcwatch_linux.go), where no memory cgroup
// charges them to the tree (0 with one, which the kernel holds to its limit).
// Safe to call at any time.
func (t *Tree) IPC() int64 {
	if t.cgroup != nil {
		return 0
	}
	return t.ipc.Load()
}

// Usage is what the kernel accounted of the tree once it was gone: the
// launcher's figures of every process it reaped (see treeUsage), with the tmpfs
// bytes its memory cgroup held, the peak of its pids cgroup and the CPU time its
// cpuacct cgroup counted (which includes children the kernel reaped itself).
// Zero figures where nothing told (a launcher that died). Call it after Wait.
func (t *Tree) Usage() policy.Usage {
	<-t.finished
	u := t.res.Usage
	u.Written += t.ended.shmem
	u.Processes = max(u.Processes, t.ended.peakTasks)
	u.CPU = max(u.CPU, t.ended.cpu)
	return u
}

// HardOpenFiles is this process's hard RLIMIT_NOFILE, which launchers inherit
// and cannot raise: the most files a command may be allowed to open.
func HardOpenFiles() (uint64, error) {
	var cur syscall.Rlimit
	err := syscall.Getrlimit(unix.RLIMIT_NOFILE, &cur)
	return cur.Max, err
}

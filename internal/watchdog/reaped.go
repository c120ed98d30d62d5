package watchdog

import "time"

// Children the kernel reaps itself. A process whose parent ignores SIGCHLD is
// reaped by the kernel when it exits, and its CPU time and writes (with those of
// the children it reaped) are added to no one's figures: once it is gone, the
// tree's sum of /proc figures drops by what it used. So each poll keeps every
// process's figures, and a process that is gone by the next poll while its
// parent, still there, was ignoring SIGCHLD, leaves its last figures in the
// tree's sums for good. What such a child did after the last poll that saw it,
// and a child that lives less than one poll, are still not counted (where the
// kernel counts the tree's CPU time, see KernelCPU, its count covers them);
// SA_NOCLDWAIT, which does the same, is not visible in /proc and not counted.

// how says what measure reads.
type how struct {
	excludeRoot, writes, memfds bool
	// procs, if not nil, gets each process's figures (Linux).
	procs map[int]proc
}

// proc is what one poll saw of a process.
type proc struct {
	ppid        int
	cpu         time.Duration // its own and its reaped children's
	written     int64         // the same
	ignoresCHLD bool          // its children are reaped by the kernel
}

// autoReaped is what the tree's children that the kernel reaped used.
type autoReaped struct {
	last    map[int]proc
	cpu     time.Duration
	written int64
}

// update takes this poll's processes and adds the figures of those that were
// reaped by the kernel since the last.
func (a *autoReaped) update(now map[int]proc) {
	for pid, p := range a.last {
		if _, alive := now[pid]; alive {
			continue
		}
		if parent, ok := a.last[p.ppid]; ok && parent.ignoresCHLD {
			if _, still := now[p.ppid]; still {
				a.cpu += p.cpu
				a.written += p.written
			}
		}
	}
	a.last = now
}

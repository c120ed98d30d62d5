package policy

import "time"

// Resource limits beyond time and memory (issue 14), with the defaults and bounds of
// exec_command's parameters. Sessions and `task run --kind native` use the same ones.
const (
	ExecDefaultMaxProcesses = 256
	ExecMinMaxProcesses     = 1
	ExecMaxMaxProcesses     = 4096

	ExecDefaultMaxWriteMb = 1024
	ExecMaxMaxWriteMb     = 65536

	// cpuMs defaults to 0: no CPU limit, a call is bounded by its wall time only.
	ExecMaxCPUMs = 1000000

	ExecDefaultMaxOpenFiles = 1024
	// The launcher that starts a command shares its RLIMIT_NOFILE (see jail's
	// applyRlimits) and holds about 20 descriptors while the command runs (with
	// allowHosts, the proxy's listeners and the connections it hands over).
	ExecMinMaxOpenFiles = 64
	ExecMaxMaxOpenFiles = 65536
)

// ForkRefusalsToKill is how many forks the kernel may refuse a tree held to
// maxProcesses before the watchdog ends the call: as many as the limit, at least
// 8 and at most 64. A program that meets the limit now and then gets EAGAIN and
// may retry or give up; a fork bomb's processes are all refused, again and again
// (bash retries a fork after 1, 2, 4, 8 s), and its call ends within about a
// second instead of at its timeout.
func ForkRefusalsToKill(maxProcesses int) int { return min(max(maxProcesses, 8), 64) }

// Limits are the resource limits of one command tree (the command and everything it
// starts) beyond its wall time and memory, which the runners take as before. A nil
// *Limits sets none of them. Enforcers set each one in the kernel where the host
// lets them and leave the rest to the supervisor's watchdog (see Enforced).
type Limits struct {
	// Processes bounds the processes and threads alive at once in the tree; 0: no
	// bound. Kernel: a pids cgroup of the command's own (forks past it fail with
	// EAGAIN); watchdog: the tree counted every poll.
	Processes int
	// WriteBytes bounds the bytes the tree writes to files: every single file by
	// RLIMIT_FSIZE (a write past it fails with EFBIG), all of them together by the
	// watchdog. Negative: no bound; 0: nothing may be written.
	WriteBytes int64
	// CPU bounds the CPU time of the whole tree; 0: no bound. Kernel: RLIMIT_CPU
	// of each process (whole seconds); watchdog: the tree's sum.
	CPU time.Duration
	// OpenFiles is each process's RLIMIT_NOFILE (soft and hard); 0: inherited.
	OpenFiles int
}

// Usage is what a command tree used, measured for the whole tree (the launcher or
// wrapper that runs it excluded).
type Usage struct {
	// CPU is the CPU time (user and system) of every process of the tree.
	CPU time.Duration
	// MaxRSS is the most resident memory the tree held at once, as far as it was
	// seen: the largest sum the watchdog sampled, or the peak of its largest
	// process, whichever is more.
	MaxRSS int64
	// Processes is the most processes and threads seen alive at once.
	Processes int
	// Written is the bytes the tree wrote to files: dirtied in the page cache
	// (less what was truncated before it reached the disk), plus what it added to
	// tmpfs where the host counts that (the call's memory cgroup).
	Written int64
}

// Merge keeps the larger figure of each: usage measured twice (by the watchdog's
// samples and by the kernel's accounting at the end) is at least what either saw.
func (u Usage) Merge(o Usage) Usage {
	return Usage{CPU: max(u.CPU, o.CPU), MaxRSS: max(u.MaxRSS, o.MaxRSS), Processes: max(u.Processes, o.Processes), Written: max(u.Written, o.Written)}
}

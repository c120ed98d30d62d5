package watchdog

import "time"

// KernelCPU is what an enforcer whose kernel counts the CPU time of the whole
// tree (a cpuacct cgroup of its own) adds to a Kernel: that count includes the
// children the kernel reaped itself (their parent ignored SIGCHLD), whose CPU
// time the per-process figures of /proc lose once they are gone. Optional.
type KernelCPU interface {
	// KernelCPU is the tree's CPU time so far; false where the kernel keeps
	// no count of it.
	KernelCPU() (time.Duration, bool)
}

// kernelCPU is k's count of the tree's CPU time, or 0.
func kernelCPU(k Kernel) time.Duration {
	if kc, ok := k.(KernelCPU); ok {
		if d, ok := kc.KernelCPU(); ok {
			return d
		}
	}
	return 0
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/autobox-dev/autobox/jail"
)

// limitChecks reports how exec_command's limits beyond time and memory are held
// here: by the kernel, or only by the watchdog that polls the tree every 10 ms.
func limitChecks(r *DoctorReport, iso jail.Isolation) {
	switch {
	case iso.ProcessCgroups:
		r.add("process limit", statusOK, "kernel: a pids cgroup per command (forks past maxProcesses fail with EAGAIN; a call refused that many, 8 to 64, is killed)", "")
	case iso.UserNamespace && iso.NprocPerUserNS:
		r.add("process limit", statusOK, "kernel: RLIMIT_NPROC, which counts the tasks of the call's own user namespace (forks past maxProcesses fail with EAGAIN)",
			"a call held at its limit runs on until its timeout (the refused forks are not counted without a pids cgroup)")
	case iso.Mode == jail.ModeLandlock && os.Getuid() != 0:
		uid, n := userProcesses()
		r.add("process limit", statusOK, fmt.Sprintf("kernel, as a backstop: RLIMIT_NPROC, set for each call to the tasks of uid %d then (it has %d processes now) plus maxProcesses plus 64 (forks past it fail with EAGAIN); the watchdog kills a tree past maxProcesses", uid, n),
			"RLIMIT_NPROC counts every process of the user: a call's forks are refused below maxProcesses when the user's other processes grow by more than 64 while it runs; where /proc shows fewer of them than the kernel counts (hidepid, a container sharing the host's users) a call runs on the watchdog alone")
	default:
		r.add("process limit", statusInfo, "watchdog only (a pids cgroup per command needs root on cgroup v1); "+nprocNote(),
			"a fork bomb can pass maxProcesses for up to one poll (10 ms) before the call is killed; nothing refuses a fork with EAGAIN")
	}
	tmpfs := "tmpfs writes too (the call's memory cgroup counts them)"
	if !iso.MemoryCgroups {
		tmpfs = "not tmpfs writes (no memory cgroup here to count them)"
	}
	r.add("write limit", statusOK, "kernel: RLIMIT_FSIZE per file (EFBIG past maxWriteMb); all files together: watchdog (the kernel's per-process write accounting"+readsAsOwner()+"), "+tmpfs+"; fallocate refused",
		"a command that writes faster than the watchdog polls can pass maxWriteMb by what it writes in 10 ms; children the kernel reaps itself (their parent ignores SIGCHLD) that live less than a poll are not counted at all: each of their files is still held to maxWriteMb")
	sum := "the tree's sum: watchdog, which misses children the kernel reaps itself (their parent ignores SIGCHLD) that live less than a poll: for them the bound is timeoutMs"
	if jail.CPUAccounting() {
		sum = "the tree's sum: kernel (a cpuacct cgroup per command counts every process, those the kernel reaps itself too), read by the watchdog"
	}
	if iso.CPUCgroups {
		r.add("cpu limit", statusOK, "kernel: RLIMIT_CPU per process (whole seconds) and a cpu cgroup per command (calls share the CPU equally); "+sum, "")
	} else {
		r.add("cpu limit", statusInfo, "kernel: RLIMIT_CPU per process (whole seconds); "+sum+"; no cpu cgroup per command (needs root on cgroup v1)",
			"a call's share of the CPU grows with its processes")
	}
	if hard, err := jail.HardOpenFiles(); err == nil {
		r.add("open files limit", statusOK, fmt.Sprintf("kernel: RLIMIT_NOFILE per process (maxOpenFiles up to %d here, this process's hard limit)", hard), "")
	}
}

// nprocNote says why RLIMIT_NPROC is not the process limit here: it counts every
// process of a user, not a call's, and does not bind root at all.
func nprocNote() string {
	if os.Getuid() == 0 {
		return "RLIMIT_NPROC is not used: it does not bind root"
	}
	uid, n := userProcesses()
	return fmt.Sprintf("RLIMIT_NPROC is not used: it counts every process of uid %d (%d now), not a call's", uid, n)
}

// userProcesses counts the processes of this process's uid.
func userProcesses() (uid, n int) {
	uid = os.Getuid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == uid {
				n++
			}
		}
	}
	return uid, n
}

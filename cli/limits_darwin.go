package cli

import "syscall"

// limitChecks reports how exec_command's limits beyond time and memory are held on
// macOS: per-process rlimits in the kernel, the rest by the watchdog, which sees
// only the live processes of the tree (no cgroups here).
func limitChecks(r *DoctorReport) {
	r.add("process limit", statusInfo, "watchdog only (macOS has no per-call process limit; RLIMIT_NPROC counts every process of the user)",
		"a fork bomb can pass maxProcesses for up to one poll (10 ms) before the call is killed; nothing refuses a fork with EAGAIN")
	r.add("write limit", statusInfo, "kernel: RLIMIT_FSIZE per file (EFBIG past maxWriteMb); bytes written in all are not measured here",
		"a command can write maxWriteMb to each of many files")
	r.add("cpu limit", statusInfo, "kernel: RLIMIT_CPU per process (whole seconds); the tree's sum of its live processes: watchdog",
		"CPU time of processes that already exited is not counted; calls share the CPU as processes do")
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil {
		r.add("open files limit", statusOK, "kernel: RLIMIT_NOFILE per process", "")
	}
}

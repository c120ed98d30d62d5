package seccomp

import "golang.org/x/net/bpf"

// Other processes: system calls that take a process, process group or user
// as their target.
//
// A filter cannot know the caller's pid, so a call that names its target by
// pid may name only itself, by 0 (which every such call reads as "the
// caller"); any other pid fails with EPERM, as the kernel answers a target
// it may not touch. Without it, a command that runs as the server's user
// (an ordinary user's server; root without namespaces) could lower the
// server's RLIMIT_AS until it crashes, or its RLIMIT_NOFILE until it refuses
// every call, change its priority or CPUs, or set RLIMIT_CPU 0 on its own
// launcher to leave a daemon behind. Landlock's scoping covers signals
// (kill, tgkill, pidfd_send_signal) and its ptrace rule the calls that need
// ptrace access, not these.
//
// What a command does to itself keeps working: nice, ulimit, taskset and
// ionice running a program, os.sched_setaffinity(0, ...), getrlimit and
// setrlimit (prlimit64 with pid 0). Reading (getpriority, sched_get*,
// ioprio_get) is not restricted. What fails: naming a pid, its own included
// (`renice -p $$`, `taskset -p`, `prlimit --pid`, and thread-level affinity
// or scheduling set by a thread id, as pthread_setaffinity_np does).
var (
	// PidZeroOnly take a pid as their first argument and may only name the
	// caller, by 0.
	PidZeroOnly = []string{
		"prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
		"sched_setattr", "migrate_pages", "move_pages", "get_robust_list",
	}
	// DeniedTargets act on another process through a pidfd or a pair of
	// pids, which a filter cannot tell from the caller's own; none is needed
	// by compilers, interpreters or shells (kcmp's one common user, Mesa,
	// copes with its failure). pidfd_getfd and process_madvise need ptrace
	// access, like ptrace itself, which is denied.
	DeniedTargets = []string{"process_madvise", "pidfd_getfd", "process_mrelease", "kcmp"}
	// NoPidfdOpen fail with ENOSYS, as before Linux 5.3: Go's os package and
	// Python's asyncio then wait for children as they do on such kernels. A
	// pidfd of a process outside the call would serve only to signal it
	// (Landlock's scoping refuses that) or to watch it exit. clone's
	// CLONE_PIDFD (a pidfd of the caller's own child) stays.
	NoPidfdOpen = []string{"pidfd_open"}
)

// which values of setpriority(2) and ioprio_set(2).
const (
	PrioProcess    = 0
	PrioPgrp       = 1
	PrioUser       = 2
	IoprioWhoProc  = 1
	IoprioWhoPgrp  = 2
	IoprioWhoUser  = 3
	labelPidZero   = "pid0"
	labelSetprio   = "setpriority"
	labelIoprioSet = "ioprio_set"
	labelWhoIsSelf = "who0"
)

// addTargets adds the dispatch cases of the calls above.
func addTargets(add func(name, label string)) {
	for _, name := range PidZeroOnly {
		add(name, labelPidZero)
	}
	for _, name := range DeniedTargets {
		add(name, labelEPERM)
	}
	for _, name := range NoPidfdOpen {
		add(name, labelENOSYS)
	}
	add("setpriority", labelSetprio)
	add("ioprio_set", labelIoprioSet)
}

// emitTargets emits the argument checks of the calls above. The kernel reads
// which, who and pid as 32-bit ints, so the low words decide.
//
// setpriority and ioprio_set may name the caller (who 0 with a process
// target) or its process group (who 0 with a group target): the command
// leads a session of its own, and no process can join a group of another
// session, so its group holds only processes of the call. A user target
// (every process of a uid, the server among them) is refused, who 0
// included.
func emitTargets(p *asm) {
	p.label(labelPidZero)
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, 0, labelAllow, labelEPERM)

	p.label(labelSetprio)
	p.load(ArgLow(0))
	p.jump(bpf.JumpGreaterThan, PrioPgrp, labelEPERM, labelWhoIsSelf) // PRIO_PROCESS is 0

	p.label(labelIoprioSet)
	p.load(ArgLow(0))
	p.alu(bpf.ALUOpSub, IoprioWhoProc) // 0 or 1 for a process or group, past 1 (wrapped) otherwise
	p.jump(bpf.JumpGreaterThan, IoprioWhoPgrp-IoprioWhoProc, labelEPERM, "")

	p.label(labelWhoIsSelf)
	p.load(ArgLow(1))
	p.jump(bpf.JumpEqual, 0, labelAllow, labelEPERM)
}

// The launcher's threads, as a command's signals may name them.
//
// Landlock's scoping refuses a command's signals to a process outside its
// domain, and no thread of the launcher is in it once the thread that
// restricted itself and forked the command has exited. Until then, a moment
// after the command starts (longer on a loaded machine, where that thread may
// wait for a CPU), that thread shares the command's domain: a signal the
// command directs at it (tgkill, tkill, rt_tgsigqueueinfo, and kill or
// rt_sigqueueinfo given the thread's id, which the kernel checks against that
// thread) would reach it, and a SIGKILL would end the whole launcher. Without
// a pid namespace that is the command getting rid of its supervision; where
// the launcher is the namespace's init the kernel drops it anyway. The filter
// therefore refuses those calls when they name the launcher's process or that
// thread, with EPERM, as Landlock refuses the other threads. What it cannot
// see: pidfd_send_signal on a descriptor of /proc/<thread id> (pidfd_open
// itself fails with ENOSYS here); SECURITY.md says so.
const (
	labelLauncherTgid = "launcher-tgid"
	labelLauncherTid  = "launcher-tid"
)

func addLauncherSignals(add func(name, label string)) {
	add("tgkill", labelLauncherTgid)
	add("rt_tgsigqueueinfo", labelLauncherTgid)
	add("tkill", labelLauncherTid)
	add("kill", labelLauncherTid)
	add("rt_sigqueueinfo", labelLauncherTid)
}

// emitLauncherSignals emits the checks of addLauncherSignals: the first
// argument (a thread group id, or for tkill, kill and rt_sigqueueinfo a
// process or thread id) read as a 32-bit int.
func emitLauncherSignals(p *asm, o Options) {
	p.label(labelLauncherTgid)
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, uint32(o.Launcher), labelEPERM, labelAllow)

	p.label(labelLauncherTid)
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, uint32(o.Launcher), labelEPERM, "")
	p.jump(bpf.JumpEqual, uint32(o.LauncherThread), labelEPERM, labelAllow)
}

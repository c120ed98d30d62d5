package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// The JS worker's filter is an allow-list. The worker runs V8 10.9 (2022) on
// code a model wrote, so it is built on the assumption that the code can run
// native code in the worker: whatever the filter lets through is what an
// attacker holds. A worker serving a call needs only memory, threads, time,
// signals to itself and the pipes it inherited; everything else fails.
//
// The lists below were measured: supervisor's TestWorkerSyscallsMeasured runs
// representative calls (allocation and GC, big ArrayBuffers, WebAssembly,
// promises and timers, every bridge round trip, heap exhaustion, a timeout)
// under this filter and fails when the worker makes a system call it refuses.
//
// What is refused is reported: a refused call raises SIGSYS
// (SECCOMP_RET_TRAP), whose handler (jail's EnterWorker) writes
// "autobox-worker-seccomp: refused system call N" to the worker's stderr and
// makes the call return the errno in the trap's data, as SECCOMP_RET_ERRNO
// would. The supervisor logs those lines. WorkerQuiet are the refusals that
// V8, glibc and Go meet on their ordinary paths and cope with; they fail
// without a report.

// WorkerCall is a system call of the worker's filter, with why it is there.
type WorkerCall struct {
	Name   string
	Reason string
}

// WorkerAllowed are allowed whatever their arguments.
var WorkerAllowed = []WorkerCall{
	{"read", "frames from the supervisor's pipe"},
	{"write", "frames to the supervisor's pipe; V8's fatal messages and SIGSYS reports to stderr"},
	{"close", "Go closes files it no longer references (finalizers)"},
	{"munmap", "V8's heap and Go's memory"},
	{"mprotect", "V8's JIT makes its anonymous code pages writable and executable in turn; which pages are file-backed cannot be told from arguments, and the worker has no file to map (no open, no memfd)"},
	{"pkey_mprotect", "mprotect with a protection key: V8 protects code with keys where the CPU has them"},
	{"pkey_alloc", "V8 allocates protection keys where the CPU has them"},
	{"pkey_free", "V8 frees its protection keys"},
	{"madvise", "V8 and Go return freed pages to the kernel"},
	{"mremap", "V8 remaps pages (OS::RemapPages); glibc's realloc of large blocks"},
	{"brk", "glibc's malloc (V8's C++ allocations)"},
	{"futex", "locks and condition variables of Go and V8"},
	{"sched_yield", "Go's and V8's spin locks"},
	{"sched_getaffinity", "glibc, Go and V8 count the CPUs they may use (reads only; in the worker's own pid namespace it names nothing else)"},
	{"set_robust_list", "glibc at each thread's start"},
	{"rseq", "glibc registers each new thread's restartable sequences"},
	{"gettid", "V8 and Go name their threads by id"},
	{"getpid", "Go's signals to its own threads (tgkill with its pid)"},
	{"exit", "a thread ends"},
	{"exit_group", "the worker ends after its call"},
	{"rt_sigaction", "Go and glibc install and reset signal handlers"},
	{"rt_sigprocmask", "Go and glibc block signals around thread creation and in handlers"},
	{"rt_sigreturn", "return from a signal handler (Go preempts goroutines with SIGURG)"},
	{"sigaltstack", "Go gives each thread a signal stack"},
	{"restart_syscall", "a sleep interrupted by a signal resumes"},
	{"clock_gettime", "time (V8's thread CPU clocks are not in the vDSO)"},
	{"clock_getres", "time"},
	{"gettimeofday", "time"},
	{"nanosleep", "Go's sleeps"},
	{"clock_nanosleep", "glibc's sleeps (V8's)"},
	{"epoll_create1", "Go's poller, which its timers use (setTimeout, the time limit)"},
	{"epoll_ctl", "Go's poller"},
	{"epoll_pwait", "Go's poller"},
	{"eventfd2", "Go's poller wakes itself"},
	{"getrusage", "the worker reads its own CPU time before it caps it"},
	{"getrandom", "randomness for Go's runtime and maps"},
	{"uname", "V8 reads the kernel version"},
}

// WorkerChecked are allowed in the forms their checks allow (see Worker);
// any other form is refused with EPERM, and reported.
var WorkerChecked = []WorkerCall{
	{"clone", "threads only: CLONE_THREAD set, no namespace flag (no new process, no fork, no vfork)"},
	{"mmap", "PROT_EXEC only with MAP_ANONYMOUS: V8's JIT needs anonymous executable memory, never a file's"},
	{"kill", "to the worker itself only (Go's raise), named by its pid"},
	{"tgkill", "to the worker's own threads only (Go preempts them with SIGURG), named by its pid"},
	{"fcntl", "F_GETFD, F_SETFD, F_GETFL, F_SETFL: Go looks at the descriptors it inherited"},
	{"prctl", "PR_SET_NAME and PR_GET_NAME (V8 names its threads), PR_SET_VMA (Go names its memory)"},
	{"prlimit64", "the worker's own limits (pid 0): it caps its CPU time before the call"},
}

// WorkerQuiet are refused without a report, with the errno given.
var WorkerQuiet = []struct {
	WorkerCall
	Errno uint32
}{
	{WorkerCall{"openat", "there is nothing to open: V8 and glibc try /dev/urandom, /proc/self/maps, /proc/stat, /proc/sys/vm/overcommit_memory and /sys/devices/system/cpu/online, and cope when they cannot (EACCES is what Landlock answered them before)"}, EACCES},
	{WorkerCall{"clone3", "its flags are in memory the filter cannot read; glibc then makes threads with clone, whose flags it can"}, ENOSYS},
}

// More errnos and arguments of the worker's filter.
const (
	EACCES = 13

	ProtExec     = 0x4
	MapAnonymous = 0x20
	CloneThread  = 0x00010000

	PRSetName = 15
	PRGetName = 16
	PRSetVMA  = 0x53564d41

	FGetFD = 1
	FSetFD = 2
	FGetFL = 3
	FSetFL = 4

	retTrap = 0x00030000
)

// RetTrap is the filter result that raises SIGSYS with errno e as the
// signal's si_errno (the handler makes the call return -e).
func RetTrap(e uint32) uint32 { return retTrap | e&0xffff }

// WorkerOptions are what the worker's filter depends on.
type WorkerOptions struct {
	// Pid is the worker's pid as it sees itself (1 in a pid namespace of its
	// own): the one process kill and tgkill may name. The worker cannot fork,
	// so it never changes.
	Pid uint32
	// NoTrap refuses with SECCOMP_RET_ERRNO instead of SECCOMP_RET_TRAP, for
	// a process that has no SIGSYS handler to report and return (built
	// without cgo).
	NoTrap bool
}

const (
	labelRefuse    = "refuse"     // not in the list: ENOSYS, reported
	labelRefuseArg = "refuse-arg" // in the list, arguments refused: EPERM, reported
	labelEACCES    = "eacces"
)

// Worker returns the JS worker's filter on arch a: an allow-list. Foreign
// ABIs fail with ENOSYS, unreported (see prologue).
func Worker(a *Arch, o WorkerOptions) ([]bpf.RawInstruction, error) {
	p := newAsm()
	prologue(p, a)
	var table []dispatchCase
	add := func(name, label string) error {
		nr, ok := WorkerNr(a, name)
		if !ok {
			return fmt.Errorf("seccomp: %s has no number for %s", a.Name, name)
		}
		table = append(table, dispatchCase{nr, label})
		return nil
	}
	for _, c := range WorkerAllowed {
		if err := add(c.Name, labelAllow); err != nil {
			return nil, err
		}
	}
	for _, c := range WorkerChecked {
		if err := add(c.Name, "w-"+c.Name); err != nil {
			return nil, err
		}
	}
	quiet := map[uint32]string{EACCES: labelEACCES, ENOSYS: labelENOSYS}
	for _, c := range WorkerQuiet {
		if err := add(c.Name, quiet[c.Errno]); err != nil {
			return nil, err
		}
	}
	if err := p.dispatchTable(table, labelRefuse); err != nil {
		return nil, err
	}

	// A thread shares everything with the worker; a process would be a
	// child that outlives the call. The kernel refuses CLONE_THREAD without
	// CLONE_SIGHAND and CLONE_VM, so CLONE_THREAD alone decides.
	p.label("w-clone")
	p.load(ArgLow(0))
	p.jump(bpf.JumpBitsSet, CloneThread, "", labelRefuseArg)
	p.jump(bpf.JumpBitsSet, NamespaceFlags, labelRefuseArg, labelAllow)

	p.label("w-mmap")
	p.load(ArgLow(2))
	p.jump(bpf.JumpBitsSet, ProtExec, "", labelAllow)
	p.load(ArgLow(3))
	p.jump(bpf.JumpBitsSet, MapAnonymous, labelAllow, labelRefuseArg)

	p.label("w-kill")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, o.Pid, labelAllow, labelRefuseArg)

	p.label("w-tgkill")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, o.Pid, labelAllow, labelRefuseArg)

	p.label("w-fcntl")
	p.load(ArgLow(1))
	p.jump(bpf.JumpGreaterThan, FSetFL, labelRefuseArg, "")
	p.jump(bpf.JumpGreaterOrEqual, FGetFD, labelAllow, labelRefuseArg)

	p.label("w-prctl")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, PRSetName, labelAllow, "")
	p.jump(bpf.JumpEqual, PRGetName, labelAllow, "")
	p.jump(bpf.JumpEqual, PRSetVMA, labelAllow, labelRefuseArg)

	p.label("w-prlimit64")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, 0, labelAllow, labelRefuseArg)

	refuse, refuseArg := RetTrap(ENOSYS), RetTrap(EPERM)
	if o.NoTrap {
		refuse, refuseArg = RetErrno(ENOSYS), RetErrno(EPERM)
	}
	p.label(labelRefuse)
	p.ret(refuse)
	p.label(labelRefuseArg)
	p.ret(refuseArg)
	p.label(labelEACCES)
	p.ret(RetErrno(EACCES))
	epilogue(p)
	return p.program()
}

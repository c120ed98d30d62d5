package seccomp

import "fmt"

// workerNumbers are the numbers of the system calls the worker filter names, per
// architecture (from the kernel's tables, as in arch.go; TestWorkerNumbers checks
// them against x/sys).
var workerNumbers = map[string]map[string]uint32{
	"x86_64": {
		"read": 0, "write": 1, "close": 3, "mmap": 9, "munmap": 11,
		"mprotect": 10, "madvise": 28, "mremap": 25, "brk": 12, "pkey_mprotect": 329,
		"pkey_alloc": 330, "pkey_free": 331, "futex": 202, "sched_yield": 24, "sched_getaffinity": 204,
		"set_robust_list": 273, "rseq": 334, "gettid": 186, "getpid": 39, "exit": 60,
		"exit_group": 231, "clone": 56, "clone3": 435, "rt_sigaction": 13, "rt_sigprocmask": 14,
		"rt_sigreturn": 15, "sigaltstack": 131, "kill": 62, "tgkill": 234, "restart_syscall": 219,
		"clock_gettime": 228, "clock_getres": 229, "clock_nanosleep": 230, "nanosleep": 35, "gettimeofday": 96,
		"epoll_create1": 291, "epoll_ctl": 233, "epoll_pwait": 281, "eventfd2": 290, "fcntl": 72,
		"prctl": 157, "prlimit64": 302, "getrusage": 98, "getrandom": 318, "uname": 63,
		"openat": 257, "execve": 59,
	},
	"aarch64": {
		"read": 63, "write": 64, "close": 57, "mmap": 222, "munmap": 215,
		"mprotect": 226, "madvise": 233, "mremap": 216, "brk": 214, "pkey_mprotect": 288,
		"pkey_alloc": 289, "pkey_free": 290, "futex": 98, "sched_yield": 124, "sched_getaffinity": 123,
		"set_robust_list": 99, "rseq": 293, "gettid": 178, "getpid": 172, "exit": 93,
		"exit_group": 94, "clone": 220, "clone3": 435, "rt_sigaction": 134, "rt_sigprocmask": 135,
		"rt_sigreturn": 139, "sigaltstack": 132, "kill": 129, "tgkill": 131, "restart_syscall": 128,
		"clock_gettime": 113, "clock_getres": 114, "clock_nanosleep": 115, "nanosleep": 101, "gettimeofday": 169,
		"epoll_create1": 20, "epoll_ctl": 21, "epoll_pwait": 22, "eventfd2": 19, "fcntl": 25,
		"prctl": 167, "prlimit64": 261, "getrusage": 165, "getrandom": 278, "uname": 160,
		"openat": 56, "execve": 221,
	},
}

// WorkerNr returns the number of a system call the worker filter names on a.
func WorkerNr(a *Arch, name string) (uint32, bool) {
	nr, ok := workerNumbers[a.Name][name]
	return nr, ok
}

// SyscallName names system call nr on a from the tables this package keeps,
// or returns "system call <nr>" for a call none of them has.
func SyscallName(a *Arch, nr uint32) string {
	for _, table := range []map[string]uint32{workerNumbers[a.Name], a.nr} {
		for name, n := range table {
			if n == nr {
				return name
			}
		}
	}
	return fmt.Sprintf("system call %d", nr)
}

//go:build linux && cgo

package jail

// The worker's SIGSYS handler. Its filter refuses with SECCOMP_RET_TRAP, so
// the kernel raises SIGSYS on the thread that made the call instead of
// running it. The handler writes one line to stderr (fd 2, the pipe the
// supervisor reads), "autobox-worker-seccomp: refused system call N", and
// sets the call's return value to minus the errno the filter put in the
// trap's data (si_errno): to the code that made it, the call failed as with
// SECCOMP_RET_ERRNO. It makes one system call, write, which the filter
// allows, and touches nothing but its own stack.
//
// The handler replaces the Go runtime's for SIGSYS, which would end the
// process; Go itself never uses the signal.
//
// cloneProbe is here too: it makes a child with the given clone flags that
// exits at once, to find out whether the host allows them.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static void autobox_sigsys(int sig, siginfo_t *si, void *ctx) {
	static const char prefix[] = "autobox-worker-seccomp: refused system call ";
	char buf[sizeof prefix + 16];
	int saved = errno;
	memcpy(buf, prefix, sizeof prefix - 1);
	size_t n = sizeof prefix - 1;
	char digits[12];
	int nd = 0;
	unsigned int nr = (unsigned int)si->si_syscall;
	do {
		digits[nd++] = (char)('0' + nr % 10);
		nr /= 10;
	} while (nr > 0 && nd < (int)sizeof digits);
	while (nd > 0)
		buf[n++] = digits[--nd];
	buf[n++] = '\n';
	syscall(SYS_write, 2, buf, n);
	ucontext_t *uc = ctx;
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = -(long)si->si_errno;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = -(long)si->si_errno;
#else
#error "no SIGSYS return register for this architecture"
#endif
	errno = saved;
}

static int autobox_report_refusals(void) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = autobox_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSYS, &sa, NULL);
}

static int autobox_exit_at_once(void *arg) {
	syscall(SYS_exit, 0);
	return 0;
}

// autobox_clone_probe returns 0, or the errno of the clone or of the wait.
static int autobox_clone_probe(int flags) {
	const size_t stack_size = 64 * 1024;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return errno;
	// No handler of the Go runtime may run in a child that shares its memory.
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int pid = clone(autobox_exit_at_once, stack + stack_size, flags | CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
	int err = pid < 0 ? errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	munmap(stack, stack_size);
	if (pid < 0)
		return err;
	int status;
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return errno;
	return 0;
}
*/
import "C"

import "syscall"

// reportRefusals installs the SIGSYS handler above for the whole process
// and reports whether it did.
func reportRefusals() bool { return C.autobox_report_refusals() == 0 }

// cloneProbe makes a child with flags (CLONE_VM, CLONE_VFORK and SIGCHLD
// added) that exits at once, and reaps it.
func cloneProbe(flags int) error {
	if e := C.autobox_clone_probe(C.int(flags)); e != 0 {
		return syscall.Errno(e)
	}
	return nil
}

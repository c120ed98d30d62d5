//go:build linux && cgo

package restrict

// The worker's SIGSYS handler. Its filter refuses with SECCOMP_RET_TRAP, so
// the kernel raises SIGSYS on the thread that made the call instead of
// running it. The handler writes one line to stderr (fd 2, the pipe the
// supervisor reads), RefusedPrefix and the call's number, and
// sets the call's return value to minus the errno the filter put in the
// trap's data (si_errno): to the code that made it, the call failed as with
// SECCOMP_RET_ERRNO. It makes one system call, write, which the filter
// allows, and touches nothing but its own stack.
//
// The handler replaces the Go runtime's for SIGSYS, which would end the
// process; Go itself never uses the signal.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
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
*/
import "C"

// reportRefusals installs the SIGSYS handler above for the whole process
// and reports whether it did.
func reportRefusals() bool { return C.autobox_report_refusals() == 0 }

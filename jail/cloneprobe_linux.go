//go:build linux && cgo

package jail

// cloneProbe makes a child with the given clone flags that exits at once, to
// find out whether the host allows them (see WorkerSpawner.probeNamespaces).

/*
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

// cloneProbe makes a child with flags (CLONE_VM, CLONE_VFORK and SIGCHLD
// added) that exits at once, and reaps it.
func cloneProbe(flags int) error {
	if e := C.autobox_clone_probe(C.int(flags)); e != 0 {
		return syscall.Errno(e)
	}
	return nil
}

//go:build linux && cgo

package jail

// Forking a user-namespace launcher without copying the supervisor.
//
// Go's syscall.ForkExec uses vfork (CLONE_VM|CLONE_VFORK) unless the child
// gets a user namespace: then it forks for real, so that the parent can write
// the child's uid and gid maps while the child waits. A real fork of the
// supervisor (a large process, V8 linked in) copies its page tables and
// write-protects every page it had written; the supervisor then takes a page
// fault on each first write after every launcher it makes. Measured on the
// 2-core VM of our CI: ~250 more minor faults per call, twice the server's
// CPU per call, and every step of the next call's path 2-4× slower than in
// a root server. That was most of the user-namespace mode's extra latency.
//
// forkUserNSLauncher vforks instead, in C: the child is in its new user
// namespace with every capability there, so it writes its own maps (an
// unprivileged process may map its own euid and egid, with setgroups denied
// first), raises launcherCaps as ambient capabilities so that they survive
// the exec, and execs the launcher; the parent is suspended until then, as
// with any vfork. JS workers are started by the same child (see
// workerspawn_linux.go), without maps or capabilities and with a seccomp
// filter it installs right before its exec. The child touches only its own stack and the arguments
// prepared for it, with every signal blocked and, before the mask is
// restored for the exec, every handler reset to the default (the Go
// runtime's handlers must never run in a child that shares its memory),
// the way glibc's posix_spawn does it.

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

struct userns_child {
	const char *path;
	char *const *argv;
	char *const *envp;
	const int *fds;      // become 0..nfds-1
	int nfds;
	const char *uidmap;  // "uid uid 1\n", or NULL: no maps
	const char *gidmap;
	const int *caps;     // ambient capabilities to raise
	int ncaps;
	int pdeathsig;
	int close_others;    // close every descriptor past nfds-1 at the exec
	unsigned long nproc; // RLIMIT_NPROC to set, or 0
	const struct sock_fprog *filter; // installed right before the exec, or NULL
	sigset_t oldmask;    // restored right before the exec
	int err;             // errno of the failed step, 0 if the exec happened
	int step;            // which step failed (see userns_steps)
};

static int write_file(const char *path, const char *data) {
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = strlen(data);
	long w = syscall(SYS_write, fd, data, n);
	syscall(SYS_close, fd);
	return w == (long)n ? 0 : -1;
}

static int userns_child(void *arg) {
	struct userns_child *c = arg;
	int i;
	// Default handlers, before any signal may be unblocked.
	for (i = 1; i < _NSIG; i++) {
		if (i == SIGKILL || i == SIGSTOP)
			continue;
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_DFL;
		syscall(SYS_rt_sigaction, i, &sa, NULL, _NSIG / 8);
	}
#define FAIL(s) do { c->err = errno; c->step = (s); syscall(SYS_exit, 127); } while (0)
	if (syscall(SYS_setsid) < 0)
		FAIL(1);
	if (c->pdeathsig && syscall(SYS_prctl, PR_SET_PDEATHSIG, c->pdeathsig, 0, 0, 0) < 0)
		FAIL(2);
	if (c->uidmap != NULL) {
		if (write_file("/proc/self/setgroups", "deny") < 0)
			FAIL(3);
		if (write_file("/proc/self/uid_map", c->uidmap) < 0)
			FAIL(4);
		if (write_file("/proc/self/gid_map", c->gidmap) < 0)
			FAIL(5);
	}
	if (c->ncaps > 0) {
		struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
		struct __user_cap_data_struct data[2];
		if (syscall(SYS_capget, &hdr, data) < 0)
			FAIL(6);
		for (i = 0; i < c->ncaps; i++)
			data[c->caps[i] / 32].inheritable |= 1u << (c->caps[i] % 32);
		if (syscall(SYS_capset, &hdr, data) < 0)
			FAIL(6);
		for (i = 0; i < c->ncaps; i++)
			if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c->caps[i], 0, 0) < 0)
				FAIL(7);
	}
	// Out of the way first (a source may be a later target), then in place:
	// dup2 leaves the copies without close-on-exec, the originals keep it.
	int moved[64];
	if (c->nfds > 64) {
		errno = EINVAL;
		FAIL(8);
	}
	for (i = 0; i < c->nfds; i++) {
		moved[i] = (int)syscall(SYS_fcntl, c->fds[i], F_DUPFD_CLOEXEC, c->nfds);
		if (moved[i] < 0)
			FAIL(8);
	}
	for (i = 0; i < c->nfds; i++)
		if (syscall(SYS_dup2, moved[i], i) < 0)
			FAIL(8);
	// What this process inherited without close-on-exec (from whoever
	// started the server) must not reach the child either.
	if (c->close_others && syscall(SYS_close_range, c->nfds, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		FAIL(11);
	if (c->nproc > 0) {
		struct rlimit rl = {c->nproc, c->nproc};
		if (syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &rl, NULL) < 0)
			FAIL(12);
	}
	// Last: the filter may refuse what the steps above do (no_new_privs is
	// the calling thread's already, or the kernel refuses the filter).
	if (c->filter != NULL && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, c->filter) < 0)
		FAIL(10);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &c->oldmask, NULL, _NSIG / 8);
	syscall(SYS_execve, c->path, c->argv, c->envp);
	FAIL(9);
#undef FAIL
	return 127;
}

// userns_spawn returns the child's pid, or -1 with c->err and c->step set.
static int userns_spawn(struct userns_child *c, int cloneflags) {
	const size_t stack_size = 256 * 1024;
	char *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		c->err = errno;
		c->step = 0;
		return -1;
	}
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &c->oldmask);
	c->err = 0;
	int pid = clone(userns_child, stack + stack_size, cloneflags | CLONE_VM | CLONE_VFORK | SIGCHLD, c);
	int cloneErr = errno;
	pthread_sigmask(SIG_SETMASK, &c->oldmask, NULL);
	munmap(stack, stack_size);
	if (pid < 0) {
		c->err = cloneErr;
		c->step = 0;
		return -1;
	}
	return pid;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userNSSteps names the child's steps for errors (see userns_child).
var userNSSteps = []string{"clone", "setsid", "PR_SET_PDEATHSIG", "writing setgroups", "writing uid_map", "writing gid_map", "capset", "raising ambient capabilities", "placing descriptors", "exec", "installing the seccomp filter", "close_range", "setting RLIMIT_NPROC"}

// forkUserNSLauncher starts exe with argv and env in new user, pid and IPC
// namespaces, the caller's uid and gid mapped to themselves, launcherCaps
// ambient, files as its descriptors 0..n-1, in a session of its own, with
// pdeathsig tied to the calling thread (lock it). It returns the child's pid;
// a child that failed before its exec has been reaped, and the error names
// the step.
func forkUserNSLauncher(exe string, argv, env []string, files []uintptr, pdeathsig syscall.Signal) (int, error) {
	return vforkExec(&vforkSpec{
		exe: exe, argv: argv, env: env, files: files,
		cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWIPC,
		mapIDs:     true, caps: launcherCaps, pdeathsig: pdeathsig,
	})
}

// vforkExec starts s in a session of its own with userns_child. It returns
// the child's pid; a child that failed before its exec has been reaped, and
// the error names the step.
func vforkExec(s *vforkSpec) (int, error) {
	cstrs := func(ss []string) (**C.char, func()) {
		p := C.malloc(C.size_t(len(ss)+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
		arr := unsafe.Slice((**C.char)(p), len(ss)+1)
		for i, s := range ss {
			arr[i] = C.CString(s)
		}
		arr[len(ss)] = nil
		return (**C.char)(p), func() {
			for _, s := range arr[:len(ss)] {
				C.free(unsafe.Pointer(s))
			}
			C.free(p)
		}
	}
	path := C.CString(s.exe)
	defer C.free(unsafe.Pointer(path))
	cargv, freeArgv := cstrs(s.argv)
	defer freeArgv()
	cenv, freeEnv := cstrs(s.env)
	defer freeEnv()
	c := (*C.struct_userns_child)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_userns_child{}))))
	defer C.free(unsafe.Pointer(c))
	if s.mapIDs {
		uid, gid := unix.Getuid(), unix.Getgid()
		c.uidmap = C.CString(fmt.Sprintf("%d %d 1\n", uid, uid))
		defer C.free(unsafe.Pointer(c.uidmap))
		c.gidmap = C.CString(fmt.Sprintf("%d %d 1\n", gid, gid))
		defer C.free(unsafe.Pointer(c.gidmap))
	}
	fds := (*C.int)(C.malloc(C.size_t(len(s.files)+1) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(fds))
	for i, f := range s.files {
		unsafe.Slice(fds, len(s.files))[i] = C.int(f)
	}
	caps := (*C.int)(C.malloc(C.size_t(len(s.caps)+1) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(caps))
	for i, c := range s.caps {
		unsafe.Slice(caps, len(s.caps))[i] = C.int(c)
	}
	if len(s.filter) > 0 {
		// In C memory: the child reads it while the parent is suspended.
		size := C.size_t(len(s.filter)) * C.size_t(unsafe.Sizeof(unix.SockFilter{}))
		insns := C.malloc(size)
		defer C.free(insns)
		copy(unsafe.Slice((*unix.SockFilter)(insns), len(s.filter)), s.filter)
		prog := (*C.struct_sock_fprog)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_sock_fprog{}))))
		defer C.free(unsafe.Pointer(prog))
		prog.len = C.ushort(len(s.filter))
		prog.filter = (*C.struct_sock_filter)(insns)
		c.filter = prog
	}
	c.path, c.argv, c.envp = path, cargv, cenv
	c.fds, c.nfds = fds, C.int(len(s.files))
	c.caps, c.ncaps = caps, C.int(len(s.caps))
	c.pdeathsig = C.int(s.pdeathsig)
	if s.closeOthers {
		c.close_others = 1
	}
	c.nproc = C.ulong(s.nproc)
	// As syscall.ForkExec: no descriptor is half-made (without
	// close-on-exec) while the child is made.
	syscall.ForkLock.Lock()
	pid := int(C.userns_spawn(c, C.int(s.cloneflags)))
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(s.files)
	if pid < 0 || c.err != 0 {
		err := syscall.Errno(c.err)
		if pid > 0 {
			var ws unix.WaitStatus
			for {
				if _, werr := unix.Wait4(pid, &ws, 0, nil); werr != unix.EINTR {
					break
				}
			}
		}
		step := int(c.step)
		if step < 0 || step >= len(userNSSteps) {
			step = 0
		}
		if step == 0 && s.cloneflags != 0 {
			return 0, fmt.Errorf("clone with %s: %w", namespaceNames(s.cloneflags), err)
		}
		return 0, fmt.Errorf("%s: %w", userNSSteps[step], err)
	}
	return pid, nil
}

// namespaceNames names the namespaces of clone flags, for errors.
func namespaceNames(flags int) string {
	var names []string
	for _, n := range []struct {
		flag int
		name string
	}{{unix.CLONE_NEWUSER, "user"}, {unix.CLONE_NEWPID, "pid"}, {unix.CLONE_NEWIPC, "IPC"}, {unix.CLONE_NEWNET, "network"}, {unix.CLONE_NEWNS, "mount"}} {
		if flags&n.flag != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) > 1 {
		names = append(names[:len(names)-2], names[len(names)-2]+" and "+names[len(names)-1])
	}
	return "new " + strings.Join(names, ", ") + " namespaces"
}

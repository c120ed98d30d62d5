package restrict

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/seccomp"
)

// EnterWorker loads the JS worker's allow-list (seccomp.Worker) on every
// thread of this process at once (SECCOMP_FILTER_FLAG_TSYNC: V8 starts
// threads while the package initialises): no exec, no open, no socket, no
// fork; threads only, signals to itself only. It is the first thing `autobox
// worker js --jailed` does, before it reads anything from the supervisor; the
// steps before it are the spawner's (jail.WorkerSpawner). A refused call is
// reported on stderr, a line starting with RefusedPrefix (see
// sigsys_linux.go), where cgo is.
func EnterWorker() error {
	filters, arch, nnp := SeccompSupport()
	if !filters || arch == "" || !nnp {
		return fmt.Errorf("%w: seccomp %v, arch %q, no_new_privs %v", ErrUnsupported, filters, arch, nnp)
	}
	a, _ := seccomp.ArchFor(runtime.GOARCH)
	trap := reportRefusals()
	raw, err := seccomp.Worker(a, seccomp.WorkerOptions{Pid: uint32(unix.Getpid()), NoTrap: !trap})
	if err != nil {
		return fmt.Errorf("%w: building the worker's seccomp filter: %w", ErrSandbox, err)
	}
	// no_new_privs is per thread and must be set on the thread that installs
	// the filter; TSYNC sets it on the others. Stay on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("%w: PR_SET_NO_NEW_PRIVS: %w", ErrSandbox, err)
	}
	tid, err := LoadFilter(SockFilter(raw), unix.SECCOMP_FILTER_FLAG_TSYNC)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	if tid != 0 {
		return fmt.Errorf("%w: thread %d has a seccomp filter the caller lacks; TSYNC refused", ErrSandbox, tid)
	}
	return nil
}

// RefusedPrefix starts the line a worker's SIGSYS handler writes to stderr
// for each call its filter refuses, followed by the call's number (the C
// handler in sigsys_linux.go spells it too).
const RefusedPrefix = "autobox-worker-seccomp: refused system call "

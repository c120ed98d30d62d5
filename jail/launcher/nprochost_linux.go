package launcher

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/rlimit"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// The process limit without namespaces (an ordinary user where user
// namespaces are refused: Ubuntu 24.04 without autobox's AppArmor profile,
// containers). There is no pids cgroup to make and no user namespace to count
// in, so only the watchdog counted the tree: a fork bomb outgrew its polls
// (633 processes under maxProcesses 256 on a busy machine) and stalled the
// machine while it was being killed.
//
// RLIMIT_NPROC holds it in the kernel instead, checked at every fork. The
// kernel counts every task of the user (of the command's real uid), so the
// launcher sets it, right before it forks the command, to the tasks that uid
// has now plus maxProcesses plus a margin (wire.HostNprocMargin): the tree can grow
// past maxProcesses, where the watchdog ends it as before, but not much
// further, however late the watchdog's poll.
//
// The count is the kernel's own, found by asking it: with the soft limit at
// n (the hard one kept, so that it can be put back) a fork succeeds exactly
// when the user has fewer than n tasks. The launcher starts from the count
// the previous call's launcher found (wire.HostTasksEnv, passed at its spawn),
// confirms it within the margin with two forks (0.2 ms each; a scan of /proc
// took 1 to 15 ms, and misses what /proc hides: hidepid, a container sharing
// the host's users), and bisects otherwise (about 17 forks, the first call).
// The forks exec nothing, and the launcher's spare threads are made first:
// while the soft limit is low it could make no thread.
//
// What it costs: a call may be refused forks below maxProcesses when the
// user's other processes (its other calls among them) grew by more than the
// margin while it ran; the refusal is noted in the result. Its very start may
// be refused so too (another call's fork bomb grew between the count and the
// fork): the launcher then waits for the count to fall back, up to
// hostNprocStartWait (see forkUnderHostNproc). A tree held below
// its limit this way, not killed, runs until its timeout; one held at
// maxProcesses is ended by the watchdog after CeilingHold.
//
// Root's commands run as an unprivileged uid here (jail.CommandCredential), and
// root has a pids cgroup on cgroup v1 (jail's cmdcgroup_linux.go); a root launcher
// without one limits that uid the same way. Its own threads are root's, which
// the kernel does not limit.

// wantHostNproc reports whether this launcher holds its command's process
// limit with RLIMIT_NPROC on the host's count: no user namespace, no pid
// namespace (a root launcher is its init), no pids cgroup (pidsMax, -1).
func wantHostNproc(pidsMax int) bool { return !inUserNS && os.Getpid() != 1 && pidsMax < 0 }

// applyHostNproc sets RLIMIT_NPROC for the command about to be forked from
// the calling thread (see above), and reports it in t.nproc. Where the
// kernel's count cannot be found, the limit is left unset: the watchdog holds
// maxProcesses alone, as it did before.
func (t *cmdThread) applyHostNproc(l *policy.Limits) error {
	if !wantHostNproc(t.pidsMax) || l == nil || l.Processes <= 0 {
		return nil
	}
	if unix.Getuid() == 0 { // this thread's: the command's uid, dropped already where root drops it
		return nil // the kernel does not limit root's forks
	}
	if !t.threadsWarm {
		t.warmThreads()
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err != nil {
		return nil
	}
	hint, err := strconv.Atoi(os.Getenv(wire.HostTasksEnv))
	if err != nil {
		hint = -1
	}
	// No user has more tasks than the kernel has pids (PID_MAX_LIMIT).
	hard := int(min(cur.Max, 1<<22))
	tasks, ok := searchTasks(hint, hard, wire.HostNprocMargin, func(n int) bool { return forkRefusedAt(uint64(n), cur) })
	if !ok {
		return nil // at the user's own hard limit already
	}
	limit := uint64(tasks + l.Processes + wire.HostNprocMargin)
	if limit >= cur.Max {
		return nil // the user's own hard limit is lower already
	}
	if err := rlimit.Set(unix.RLIMIT_NPROC, limit, limit); err != nil {
		return err
	}
	t.nproc = int(limit)
	return nil
}

// searchTasks finds, within margin, how many tasks the kernel counts for the
// user, from refused(n): whether a fork is refused with the soft limit at n,
// which holds exactly while the count is n or more. It returns up, which the
// count is below and at most margin above; ok is false if the count is hard
// or more. hint (-1: none) is tried first, at hint+margin and hint.
func searchTasks(hint, hard, margin int, refused func(int) bool) (up int, ok bool) {
	lo, up := 0, -1 // the count is lo or more, and below up once up >= 0
	try := func(n int) {
		if refused(n) {
			lo = max(lo, n)
		} else if up < 0 || n < up {
			up = n
		}
	}
	if hint >= 0 && hint+margin < hard {
		try(hint + margin)
		if up >= 0 && hint > lo {
			try(hint)
		}
	}
	if up < 0 {
		if refused(hard) {
			return 0, false
		}
		up = hard
	}
	for up-lo > margin {
		try(lo + (up-lo)/2)
	}
	return up, true
}

// forkRefusedAt reports whether the kernel refuses the calling thread a fork
// with RLIMIT_NPROC's soft limit at n (the hard limit left as cur has it, so
// the soft one can be put back). The child execs nothing: "" fails at once.
func forkRefusedAt(n uint64, cur unix.Rlimit) bool {
	if unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: cur.Max}) != nil {
		return true
	}
	_, err := syscall.ForkExec("", nil, nil)
	_ = unix.Setrlimit(unix.RLIMIT_NPROC, &cur)
	return errors.Is(err, syscall.EAGAIN)
}

// hostNprocStartWait bounds how long a launcher waits for the user's tasks to
// fall back under its command's RLIMIT_NPROC when the command's own fork is
// refused: long enough for the watchdog to end another call's fork bomb on a
// loaded machine (0.8 s in TestLimitForkBomb).
const hostNprocStartWait = 5 * time.Second

// forkUnderHostNproc runs fork, and again while the kernel refuses it EAGAIN
// where this launcher set RLIMIT_NPROC on the host's count: the user's tasks
// grew past the limit between the count and the fork (a fork bomb of another
// call, until the watchdog ends it, took a concurrent echo's start in a busy
// run). Nothing was started, so trying again is safe. The waits are raw
// system calls that keep this thread and its P: above its limit the launcher
// could make no thread, and one it cannot make is fatal to it.
func (t *cmdThread) forkUnderHostNproc(fork func() (int, error)) (int, error) {
	pid, err := fork()
	if t.nproc == 0 || !wantHostNproc(t.pidsMax) {
		return pid, err
	}
	return retryRefusedFork(pid, err, fork, hostNprocStartWait, t.nproc)
}

// retryRefusedFork is forkUnderHostNproc's loop, from the first fork's pid
// and err: the waits double from 2 ms to 50 ms until wait has passed.
func retryRefusedFork(pid int, err error, fork func() (int, error), wait time.Duration, limit int) (int, error) {
	deadline := time.Now().Add(wait)
	for pause := 2 * time.Millisecond; errors.Is(err, syscall.EAGAIN) && time.Now().Before(deadline); pause = min(2*pause, 50*time.Millisecond) {
		ts := unix.NsecToTimespec(pause.Nanoseconds())
		_, _, _ = unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		pid, err = fork()
	}
	if errors.Is(err, syscall.EAGAIN) {
		return 0, fmt.Errorf("%w (this user's processes stayed past the call's RLIMIT_NPROC of %d for %v: another call or program of the user holds many at once)", err, limit, wait)
	}
	return pid, err
}

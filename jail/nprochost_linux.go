package jail

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
	"github.com/autobox-dev/autobox/internal/rlimit"
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
// has now plus maxProcesses plus a margin (hostNprocMargin): the tree can grow
// past maxProcesses, where the watchdog ends it as before, but not much
// further, however late the watchdog's poll. The count is a scan of /proc; a
// /proc that shows fewer of the user's tasks than the kernel counts (hidepid,
// a container sharing the host's users) would make the limit too low, so
// before setting it the launcher has the kernel check the count: a fork is
// tried with the limit at the count plus the margin, and where the kernel
// refuses it, the count is taken again once, and if refused again the call
// runs on the watchdog alone, as before.
//
// What it costs: a call may be refused forks below maxProcesses when the
// user's other processes (its other calls among them) grew by more than the
// margin while it ran; the refusal is noted in the result. A tree held below
// its limit this way, not killed, runs until its timeout; one held at
// maxProcesses is ended by the watchdog after CeilingHold.
//
// Root's commands run as an unprivileged uid here (dropuid_linux.go), and
// root has a pids cgroup on cgroup v1 (cmdcgroup_linux.go); a root launcher
// without one limits that uid the same way. Its own threads are root's, which
// the kernel does not limit.

// hostNprocMargin is how far past maxProcesses the kernel lets a tree grow
// before it refuses its forks. It absorbs what the user's other tasks grow by
// while the call runs: the server's own, first (a call has its pools start a
// launcher and a JS worker, ten to thirty threads), which a margin of a
// quarter of maxProcesses (5 of 20) did not on a busy machine.
const hostNprocMargin = 64

// wantHostNproc reports whether this launcher holds its command's process
// limit with RLIMIT_NPROC on the host's count: no user namespace, no pid
// namespace (a root launcher is its init), no pids cgroup.
func wantHostNproc() bool { return !inUserNS && os.Getpid() != 1 && pidsMaxFD < 0 }

// applyHostNproc sets RLIMIT_NPROC for the command about to be forked from
// the calling thread (see above). A count the kernel does not confirm leaves
// the limit unset: the watchdog holds maxProcesses alone, as it did before.
func applyHostNproc(l *policy.Limits) error {
	if !wantHostNproc() || l == nil || l.Processes <= 0 {
		return nil
	}
	uid := unix.Getuid() // this thread's: the command's uid, dropped already where root drops it
	if uid == 0 {
		return nil // the kernel does not limit root's forks
	}
	if !threadsWarm {
		warmThreads() // its later threads count against the limit too
	}
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &cur); err != nil {
		return nil
	}
	margin := hostNprocMargin
	for attempt := 0; attempt < 2; attempt++ {
		tasks, err := userTasks(uid)
		if err != nil {
			return nil
		}
		limit := uint64(tasks + l.Processes + margin)
		if limit >= cur.Max {
			return nil // the user's own hard limit is lower already
		}
		if forkRefusedAt(uint64(tasks+margin), cur) {
			continue // more tasks than /proc shows, or many started meanwhile
		}
		if err := rlimit.Set(unix.RLIMIT_NPROC, limit, limit); err != nil {
			return err
		}
		nprocSet = int(limit)
		return nil
	}
	return nil
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

// userTasks counts the tasks (threads) of the processes /proc shows whose
// real uid is uid, as the kernel counts them for RLIMIT_NPROC. A process's
// directory is owned by its effective uid, or by root while it is not
// dumpable (as launchers are): only those owned by uid or root are read.
func userTasks(uid int) (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 4096)
	n := 0
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		dir := "/proc/" + name
		var st unix.Stat_t
		if unix.Stat(dir, &st) != nil || int(st.Uid) != uid && st.Uid != 0 {
			continue
		}
		status := procfs.Read(dir+"/status", buf)
		if procfs.LineValue(status, "Uid:") == int64(uid) { // the real uid, first of four
			n += int(procfs.LineValue(status, "Threads:"))
		}
	}
	return n, nil
}

// hostCeiling is ProcessCeiling where the launcher set RLIMIT_NPROC on the
// host's count: the kernel lets the tree have maxProcesses and the margin
// only while the user's other tasks stay as many as they were, so a tree that
// stays at maxProcesses is taken as held there (see watchdog.CeilingHold).
func (t *Tree) hostCeiling() int { return t.processes }

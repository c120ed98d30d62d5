package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
	"github.com/autobox-dev/autobox/internal/rlimit"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// The per-process limits of a command (policy.Limits): RLIMIT_FSIZE for the
// bytes of any one file, RLIMIT_NOFILE, RLIMIT_CPU. The tree-wide ones
// (processes, bytes in all, CPU in all) are the command cgroup's (jail's cmdcgroup_linux.go)
// and the supervisor's watchdog's.
//
// rlimits belong to a process, not a thread, and syscall.ForkExec has no hook
// between fork and exec. prlimit(2) on the child once ForkExec returns would
// be too late: ForkExec returns after the exec succeeded, so the command would
// already run, and could open files or fork, unlimited. So the command thread
// sets them on the launcher itself right before it forks the command, which
// inherits them. That is safe because a launcher serves this one call:
//   - RLIMIT_FSIZE applies to writes to regular files, and the launcher writes
//     none (its frames go to a pipe).
//   - RLIMIT_NOFILE caps the numbers of new descriptors, and the launcher holds
//     about 20 while the command runs (its pipes, the Go runtime's poller and
//     cgroup files, with a private network the proxy's listeners) and opens a
//     few at a time (a connection it accepts and hands to the proxy, /proc files
//     while it kills): policy.ExecMinMaxOpenFiles is 64.
//   - RLIMIT_CPU counts the launcher's own CPU time too, which is milliseconds;
//     its SIGXCPU is caught (a caught signal is reset to the default in the
//     command at exec, so the command is not spared), and the hard limit is a
//     second above the soft one.
//
// Lowering a hard limit cannot be undone without CAP_SYS_RESOURCE (which root
// lacks in some containers), so the launcher keeps them: it exits after the
// call anyway.
//
// A write past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the
// writer silently; ignored, the write fails with EFBIG, which the command can
// report. SIGXFSZ is ignored in the launcher before the fork, and an ignored
// signal stays ignored across fork and exec (Go's fork resets only the signals
// it handles), so the command gets EFBIG.
func applyRlimits(l *policy.Limits) error {
	if l == nil {
		return nil
	}
	if l.WriteBytes >= 0 {
		signal.Ignore(syscall.SIGXFSZ)
		if err := rlimit.Set(unix.RLIMIT_FSIZE, uint64(l.WriteBytes), uint64(l.WriteBytes)); err != nil {
			return fmt.Errorf("RLIMIT_FSIZE %d: %w", l.WriteBytes, err)
		}
	}
	if l.OpenFiles > 0 {
		if err := rlimit.Set(unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles)); err != nil {
			return fmt.Errorf("RLIMIT_NOFILE %d: %w", l.OpenFiles, err)
		}
	}
	if l.CPU > 0 {
		secs := uint64((l.CPU + time.Second - 1) / time.Second)
		signal.Notify(make(chan os.Signal, 1), syscall.SIGXCPU)
		if err := rlimit.Set(unix.RLIMIT_CPU, secs, secs+1); err != nil {
			return fmt.Errorf("RLIMIT_CPU %ds: %w", secs, err)
		}
	}
	return nil
}

// treeUsage is what the kernel accounted of the tree the launcher reaped: the
// CPU time and peak resident memory (of the largest process) of its reaped
// children (a process's
// children's figures are added to its own when it reaps them, so every
// descendant reaped by someone in the tree is counted once), and the bytes
// they wrote, which /proc/self/io adds up the same way. The launcher's own
// writes (its frames, to a pipe) do not count as written bytes. selfIO is the
// launcher's /proc/self/io, opened while it was still dumpable: after, its
// /proc files are root's, and an ordinary user could not open it.
//
// Children whose parent ignored SIGCHLD are reaped by the kernel without
// adding their figures to anyone's: those escape this sum, not the watchdog's.
func treeUsage(selfIO *os.File) *policy.Usage {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) != nil {
		return nil
	}
	u := &policy.Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
	// The command was forked with CLONE_VM (as Go forks), so its peak starts at
	// the launcher's own resident memory: a peak above the launcher's is the
	// tree's own, one below says nothing (the watchdog's samples tell instead).
	var self unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &self) == nil && ru.Maxrss > self.Maxrss {
		u.MaxRSS = ru.Maxrss << 10 // kilobytes
	}
	var buf [512]byte
	if n, err := selfIO.ReadAt(buf[:], 0); n > 0 && (err == nil || errors.Is(err, io.EOF)) {
		u.Written = max(0, procfs.Written(buf[:n]))
	}
	return u
}

// readShmem is the tmpfs and shared memory bytes the launcher's memory cgroup
// holds now, plus one, read from the memory.stat the supervisor passed
// (wire.MemStatEnv); 0 without one. Read right before the command's fork, it
// is what the launcher placed in the command's root, which the supervisor
// does not count as the command's writes: read by the supervisor when the
// started frame comes, it would also hold what a quick command wrote
// meanwhile (a loaded machine reads that frame late).
func readShmem() int64 {
	fd, err := strconv.Atoi(os.Getenv(wire.MemStatEnv))
	if err != nil || fd <= wire.StatusFD {
		return 0
	}
	var buf [4096]byte
	n, err := unix.Pread(fd, buf[:], 0)
	if err != nil || n <= 0 {
		return 0
	}
	return procfs.LineValue(buf[:n], "shmem ") + 1
}

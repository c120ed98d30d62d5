package jail

import (
	"fmt"
	"time"

	"github.com/autobox-dev/autobox/jail/internal/proctree"
	"golang.org/x/sys/unix"
)

// What a Tree tells once it ended (Wait and the figures), and ending it
// (Kill, and the sweep from this side when the launcher did not report);
// the launcher's own errors (launcherError).

// OOMKilled reports whether the kernel's OOM killer ended a process of the tree
// for exceeding the memory limit given to Pool.Start. Call it after Wait.
func (t *Tree) OOMKilled() bool { return t.oomKills > 0 }

// Pid is the launcher's pid: the root of the tree, whose descendants are the
// command's processes.
func (t *Tree) Pid() int { return t.pid }

// Isolation names the mode the command ran in (ModeRoot, ModeUserNS or
// ModeLandlock), with ", no private root" where its launcher had to do
// without one (the host's mounts made read-only instead). Valid after Wait.
func (t *Tree) Isolation() string {
	if !t.pidns {
		return ModeLandlock
	}
	m := ModeRoot
	if t.userns {
		m = ModeUserNS
	}
	if !t.root {
		m += ", no private root"
	}
	return m
}

// PrivateRoot reports whether the command got a private root, and so ran
// with its mounts at their places (policy.Place) rather than rewritten to
// their host paths.
func (t *Tree) PrivateRoot() bool { return t.root }

// Wait blocks until the command and everything it spawned are gone, and
// returns how the command ended. The error is non-nil (wrapping ErrLauncher)
// when the launcher failed or died without reporting; Result then holds what
// was known. The launcher itself may still be exiting; it is reaped in the
// background.
func (t *Tree) Wait() (Result, error) {
	<-t.finished
	return t.res, t.err
}

// Kill kills the whole tree now, every descendant included (even those that
// called setsid, double-forked or ignore SIGTERM), and returns when it is
// gone. It is safe to call more than once, concurrently and after exit.
//
// It asks the launcher first (closing the control socket). If the launcher
// has not reported after killGrace (wedged, stopped), the supervisor SIGKILLs
// it, which, as the init of the tree's pid namespace, takes every process of
// the tree along; without a namespace it first kills every process in the
// launcher's cgroup, whose parent chain reaches the launcher (orphans are still
// reparented to it while it lives, as it is a subreaper) or in its session,
// then the launcher's process group, then sweeps once more after it died.
// The supervisor does not become a subreaper itself: that would change how
// the whole server process reaps children.
func (t *Tree) Kill() {
	t.killOnce.Do(func() {
		t.closeCtl()
		select {
		case <-t.finished:
			return
		case <-time.After(killGrace):
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.isReaped {
			return
		}
		t.forced = true
		if !t.pidns {
			t.sweep()
			_ = unix.Kill(-t.pid, unix.SIGKILL)
		}
		// As the init of the tree's pid namespace, the launcher takes every
		// process in it along.
		_ = unix.Kill(t.pid, unix.SIGKILL)
	})
	<-t.finished
}

// closeCtl may run more than once; os.File makes the later calls no-ops.
func (t *Tree) closeCtl() { _ = t.ctl.Close() }

// sweep kills what is left of the tree from outside, after the launcher died
// or while it is wedged: with a pid namespace there is nothing to do (the
// kernel kills the namespace with its init); else every process in the
// launcher's cgroup, if it has one (membership that no process can leave),
// and every process whose parent chain reaches the launcher or that is in its
// session (which a process that called setsid and was orphaned to init
// escapes: only the cgroup catches those where there is no namespace).
func (t *Tree) sweep() {
	if t.pidns {
		return
	}
	t.cgroup.kill()
	t.cmdcg.kill()
	sweep(t.pid)
}

// sweptWhat says what became of the tree after its launcher died.
func (t *Tree) sweptWhat() string {
	switch {
	case t.pidns:
		return "every process of the command went with it (its pid namespace)"
	case t.cgroup != nil:
		return "every process of the command was killed (its cgroup)"
	}
	return "the command's processes in its session and below it were killed"
}

// sweep kills the tree below root from outside, until no live process is
// left in it or sweepRounds is reached.
func sweep(root int) {
	for i := 0; i < sweepRounds; i++ {
		n, err := proctree.KillRound(root, true)
		if err != nil || n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func describeWait(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// launcherError is an error the launcher reported. It matches ErrLauncher,
// and ErrSandbox when RestrictThread failed (whose text already says so).
type launcherError struct {
	msg     string
	sandbox bool
}

func (e *launcherError) Error() string {
	if e.sandbox {
		return e.msg
	}
	return ErrLauncher.Error() + ": " + e.msg
}

func (e *launcherError) Is(target error) bool {
	return target == ErrLauncher || (e.sandbox && target == ErrSandbox)
}

package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/launcherbin"
	"github.com/autobox-dev/autobox/jail/wire"
)

// A launcher's life seen from this side: forked from a thread locked until it
// is reaped (run), its status frames read as they come (readStatus), its
// tree swept if it died without reporting the end (reap), and the result
// published once (publish).

// run forks the launcher from a locked thread that lives until the launcher
// has exited: Pdeathsig fires when the forking thread dies, not the process.
// The lock is never released, so the thread exits with this goroutine.
func (t *Tree) run(exe string, files []uintptr, memStat *os.File, status *os.File, forked chan<- error) {
	runtime.LockOSThread()
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	mode := launcherMode()
	env := launcherEnv()
	if uid, _, drop := CommandCredential(); drop {
		env = append(env[:len(env):len(env)], wire.CommandUIDEnv+"="+strconv.Itoa(uid))
	}
	if h := hostTasksArg(); h != "" && mode == nsNone {
		env = append(env[:len(env):len(env)], h) // jail/launcher/nprochost_linux.go
	}
	if t.pidns {
		// A pid namespace, and an IPC namespace, so that System V segments
		// and POSIX message queues die with the call.
		sys.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
		if mode == nsUser {
			t.userns = true // forkUserNSLauncher makes the namespaces
			env = append(env[:len(env):len(env)], wire.UserNSEnv+"=1")
		}
	}
	if n := len(files) - wire.FirstCgroupFD; n > 0 {
		env = append(env[:len(env):len(env)], wire.CgroupsEnv+"="+strconv.Itoa(n))
		if t.cmdcg != nil && t.cmdcg.pidsMax != nil {
			env = append(env, wire.PidsMaxEnv+"=1")
		}
	}
	if memStat != nil {
		// Read by the launcher right before it forks the command: the tmpfs
		// its root holds then is not the command's (see Shmem).
		env = append(env[:len(env):len(env)], wire.MemStatEnv+"="+strconv.Itoa(len(files)))
		files = append(files[:len(files):len(files)], memStat.Fd())
	}
	attr := &syscall.ProcAttr{Env: env, Files: files, Sys: sys}
	path := launcherbin.Path(exe) // exe's small launcher, where it carries one
	start := func() (int, error) {
		if t.userns {
			return forkUserNSLauncher(path, []string{exe, "worker", wire.RoleExec}, env, files, sys.Pdeathsig)
		}
		return syscall.ForkExec(path, []string{exe, "worker", wire.RoleExec}, attr)
	}
	pid, err := start()
	if err != nil && launcherbin.Retry(path, exe, err) {
		path = exe
		pid, err = start()
	}
	if err != nil && t.pidns && mode == nsRoot && pidNamespaceRefused(err) {
		// A host (a container) that refuses pid namespaces to root: without.
		// Not for an error of the moment (nsfail_linux.go): that fails the call.
		pidNamespacesRefused.Store(true)
		t.pidns, sys.Cloneflags = false, 0
		if uid, _, drop := CommandCredential(); drop {
			attr.Env = append(attr.Env[:len(attr.Env):len(attr.Env)], wire.CommandUIDEnv+"="+strconv.Itoa(uid))
		}
		pid, err = syscall.ForkExec(path, []string{exe, "worker", wire.RoleExec}, attr)
	}
	switch {
	case err != nil && t.pidns && transientForkError(err):
		err = fmt.Errorf("making the launcher's namespaces: %w (%w)", err, errForkTransient)
	case err != nil && mode == nsUser:
		// Probed at start-up, refused now (user.max_user_namespaces reached,
		// say): the call fails rather than run with less than it was told.
		err = fmt.Errorf("making the launcher's user namespace: %w", err)
	}
	if err != nil {
		forked <- fmt.Errorf("starting launcher %s: %w", exe, err)
		return
	}
	t.pid = pid
	forked <- nil
	// Another goroutine reads the launcher's reports: waking this locked
	// thread for each of them would cost the call a thread hand-off.
	reported := make(chan report, 1)
	go func() { reported <- t.readStatus(status) }()
	t.reap(reported)
	t.closeCtl()
	if t.cgroup != nil {
		t.cgroup.remove()
	}
	t.cmdcg.remove()
	t.acct.close()
	close(t.reaped)
}

// publish makes the result visible to Wait, once.
func (t *Tree) publish(res Result, err error) {
	t.publishOnce.Do(func() {
		t.res, t.err = res, err
		close(t.finished)
	})
}

// report is what the launcher's frames told.
type report struct {
	res     Result
	failure error
	final   bool // the launcher reported an end, so its tree is empty
}

// readStatus reads the launcher's reports until it exits, and publishes the
// result at once if it reported an end.
func (t *Tree) readStatus(status *os.File) report {
	defer status.Close()
	r := report{res: Result{ExitCode: -1}}
	for !r.final {
		m, err := wire.ReadFrame(status)
		if err == nil && (m.Spec != nil || m.Base != nil) {
			err = fmt.Errorf("a %q status frame carries a spec", m.Type) // only launchers get those
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.failure = fmt.Errorf("%w: reading status: %w", ErrLauncher, err)
			}
			break
		}
		switch m.Type {
		case wire.MsgPrepared:
			close(t.preparedCh) // the launcher sends it once, before any started frame
		case wire.MsgStarted:
			r.res.Started = true
			t.prepared, t.root = m.Prepared, m.PrivateRoot
			t.nprocLimit.Store(int64(m.Nproc))
			if m.ShmemBase > 0 {
				t.shmemBase.Store(m.ShmemBase)
			} else {
				t.shmemBase.Store(t.cgroup.shmem() + 1)
			}
			t.noteHostTasks(m.Nproc)
		case wire.MsgIPC:
			t.ipc.Store(m.IPC)
		case wire.MsgSpawnError:
			r.res.SpawnError, r.final = m.Error, true
		case wire.MsgExit:
			r.res.ExitCode, r.res.Signal, r.final = m.Code, m.Signal, true
			r.res.Lookups, r.res.UnixRefused = m.Lookups, m.UnixRefused
			if m.Usage != nil {
				r.res.Usage = *m.Usage
			}
		case wire.MsgError:
			r.final = true
			r.failure = &launcherError{msg: m.Error, sandbox: m.Kind == wire.KindSandbox}
		default:
			r.failure = fmt.Errorf("%w: unexpected %q frame", ErrLauncher, m.Type)
		}
	}
	if r.final {
		// The launcher reported an end, so nothing of the tree should be left;
		// closing the control socket has it kill whatever is, should the report
		// be wrong.
		t.closeCtl()
		// Only the launcher's own exit is left: do not make Wait pay for it.
		t.oomKills = t.cgroup.oomKills() // asked for after Wait, when the cgroup may be gone
		t.ended = t.endFigures()
		t.publish(r.res, r.failure)
	}
	return r
}

// reap waits for the launcher to exit, sweeps its tree if it did not report
// an end, reaps it and publishes the result if readStatus did not.
func (t *Tree) reap(reported <-chan report) {
	// Wait for the exit without reaping: until we reap it, the launcher's pid
	// (which is also its session id) cannot be reused, so sweep can find
	// descendants that were orphaned to init by session.
	awaitExit(t.pid) // exitwait_linux.go
	r := <-reported  // at EOF now: the launcher held the pipe's only write end
	if !r.final && !t.released.Load() {
		t.sweep()
	}
	var ws unix.WaitStatus
	t.mu.Lock()
	for {
		_, err := unix.Wait4(t.pid, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	t.isReaped = true
	forced := t.forced
	t.mu.Unlock()

	if !r.final {
		t.oomKills = t.cgroup.oomKills()
		t.ended = t.endFigures()
	}
	switch {
	case r.failure != nil, r.final:
		t.publish(r.res, r.failure)
	case forced:
		t.publish(r.res, fmt.Errorf("%w: killed after it did not stop within %v", ErrLauncher, killGrace))
	default:
		t.publish(r.res, fmt.Errorf("%w: it ended (%s) before it reported how the command ended; %s", ErrLauncher, describeWait(ws), t.sweptWhat()))
	}
}

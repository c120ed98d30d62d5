package jail

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/goenv"
	"github.com/autobox-dev/autobox/policy"
)

const (
	// killGrace is how long Kill lets the launcher clean up its tree before
	// doing it from the supervisor. A launcher shares its memory cgroup with a
	// command at the limit, so under the kernel's reclaim it can be slow.
	killGrace = time.Second
	// sweepRounds bounds the supervisor's own kill loop (a process stuck in
	// uninterruptible sleep cannot be waited out).
	sweepRounds = 200
)

// Tree is a command started by Start, with everything it spawns.
// Its methods are safe for concurrent use.
type Tree struct {
	pid      int
	ctl      *os.File // our end of the control socket; closing it means "stop"
	killOnce sync.Once
	released atomic.Bool // handed back unused (Pool.Close): no command, no sweep
	cgroup   *memCgroup  // the launcher's memory cgroup (Pool), or nil
	cmdcg    *cmdCgroup  // the command's pids and cpu cgroups, or nil
	acct     acctHolder  // a v2 cgroup counting the tree's CPU time, if any (cpuacct2_linux.go)
	oomKills int         // OOM kills in cgroup, set before finished
	ended    endFigures  // what the cgroups held at the end, set before finished
	prepared bool        // the command got a prepared ruleset, set before finished
	root     bool        // the command got a private root, set before finished
	// pidns: the launcher is the init of a pid namespace of its own, so its
	// death kills every process of the tree (the kernel sees to it).
	pidns bool
	// userns: the launcher was made in a user namespace of its own.
	userns bool
	// nproc: RLIMIT_NPROC holds the command to its process limit (see
	// applyNproc), set before the spec is sent.
	nproc bool
	// nprocLimit is the RLIMIT_NPROC the launcher reported it set (in a user
	// namespace, or on the host's count: nprochost_linux.go).
	nprocLimit atomic.Int64
	// processes is the spec's Limits.Processes (0: none), set before it is sent.
	processes int
	// ipc is the memory of the System V objects of the launcher's IPC
	// namespace, as it last reported (ipcwatch_linux.go).
	ipc atomic.Int64
	// shmemBase is what the memory cgroup counted of tmpfs when the command
	// started (the private root's own files, placed by the launcher), plus
	// one; 0 before the start. See Shmem.
	shmemBase atomic.Int64

	// preparedCh is closed when the launcher reported it finished preparing
	// for a pool's base (a prepared frame); never for a launcher not asked to.
	preparedCh  chan struct{}
	finished    chan struct{} // res and err are set: Wait returns
	reaped      chan struct{} // the launcher is reaped
	publishOnce sync.Once
	res         Result
	err         error

	mu       sync.Mutex // guards isReaped against Kill's signals
	isReaped bool       // the launcher's pid is free for reuse: never signal it
	forced   bool       // Kill had to SIGKILL the launcher
}

// Start runs exe (the autobox binary) as the launcher, `exe worker exec`,
// which runs spec in its sandbox. stdout and stderr are handed to the command
// as they are, after being put into blocking mode as os/exec does (a
// non-blocking pipe would fail the command's writes with EAGAIN); its stdin
// is /dev/null. The launcher gets an empty
// environment, its own session, and SIGTERM if the supervisor dies (SIGTERM,
// not SIGKILL, so that it still kills the command's tree on the way out).
//
// Start fails before spawning anything if this host cannot enforce
// spec.Sandbox (errors wrap ErrUnsupported or ErrPolicy), unless spec.Unsafe.
// A Pool does the same with launchers started ahead of time.
func Start(exe string, spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	if err := checkSpec(spec, stdout, stderr); err != nil {
		return nil, err
	}
	return spawnAndSend(exe, spec, stdout, stderr)
}

func spawnAndSend(exe string, spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	t, err := spawn(exe, nil, probeCmdCgroups().create())
	if err != nil {
		return nil, err
	}
	if err := t.send(spec, stdout, stderr, 0, nil); err != nil {
		t.Kill()
		return nil, err
	}
	return t, nil
}

func checkSpec(spec *Spec, stdout, stderr *os.File) error {
	if spec == nil || len(spec.Argv) == 0 {
		return fmt.Errorf("%w: empty command", ErrPolicy)
	}
	if stdout == nil || stderr == nil {
		return fmt.Errorf("%w: nil stdout or stderr", ErrPolicy)
	}
	if spec.Unsafe {
		return nil
	}
	if err := refuseKernelFSWrites(&spec.Sandbox); err != nil { // kernelfs_linux.go
		return err
	}
	if spec.Sandbox.PrivateNetwork && launcherMode() == nsNone {
		return fmt.Errorf("%w: a private network (for allowHosts) needs a network namespace, which this process may not make (%s)", ErrUnsupported, NoNamespacesWhy())
	}
	return Probe().Check(&spec.Sandbox)
}

// spawn starts a launcher, which then waits for its spec, in cg if not nil,
// with ccg (if not nil) for its command. Both are removed once the launcher has
// been reaped, whatever happens.
func spawn(exe string, cg *memCgroup, ccg *cmdCgroup) (*Tree, error) {
	t, err := fork(exe, cg, ccg)
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		ccg.remove()
		return nil, err
	}
	if cg != nil {
		if err := cg.join(t.pid); err != nil {
			release(t)
			return nil, err
		}
	}
	// A v2 cgroup whose count holds the tree's CPU time, where there is no
	// cgroup v1 cpuacct one (cpuacct2_linux.go); joined before the spec comes.
	t.setAcct(newAcctCgroup(cg, t.pid))
	return t, nil
}

// fork starts a launcher; its cgroups (if any) are removed after it is reaped.
func fork(exe string, cg *memCgroup, ccg *cmdCgroup) (*Tree, error) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating control socket: %w", err)
	}
	defer unix.Close(sp[1])
	// Our end goes to the poller (the launcher's stays blocking), so that
	// send and Close on it can race safely.
	if err := unix.SetNonblock(sp[0], true); err != nil {
		unix.Close(sp[0])
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ctl := os.NewFile(uintptr(sp[0]), "ctl")
	statusR, statusW, err := os.Pipe()
	if err != nil {
		ctl.Close()
		return nil, fmt.Errorf("creating status pipe: %w", err)
	}
	defer statusW.Close()

	t := &Tree{ctl: ctl, cgroup: cg, cmdcg: ccg, pidns: usePidNamespace(), preparedCh: make(chan struct{}), finished: make(chan struct{}), reaped: make(chan struct{})}
	null := devnull.Fd()
	files := []uintptr{null, null, null, uintptr(sp[1]), statusW.Fd()}
	for _, f := range ccg.files() {
		files = append(files, f.Fd())
	}
	forked := make(chan error, 1)
	go t.run(exe, files, statusR, forked)
	err = <-forked
	ccg.handedOver()
	if err != nil {
		ctl.Close()
		statusR.Close()
		return nil, err
	}
	return t, nil
}

// send limits the launcher's cgroup (if any) to memory bytes (0: no limit)
// and hands the launcher its command. stdout and stderr go along as
// SCM_RIGHTS with the first bytes of the frame, after in's Stdin if in is not
// nil.
func (t *Tree) send(spec *Spec, stdout, stderr *os.File, memory int64, in *Interactive) error {
	m := &message{Type: msgSpec, Spec: spec}
	files := []*os.File{stdout, stderr}
	if in != nil {
		m.Stdin, m.Terminal = true, in.Terminal
		files = append([]*os.File{in.Stdin}, files...)
	}
	frame, err := encodeFrame(m)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if t.cgroup != nil {
		if err := t.cgroup.setLimit(memory); err != nil {
			return err
		}
	}
	if err := t.cmdcg.setMax(spec.Limits); err != nil {
		return fmt.Errorf("setting the pids cgroup's limit: %w", err)
	}
	t.nproc = t.userns && (t.cmdcg == nil || t.cmdcg.pidsMax == nil) && spec.Limits != nil && spec.Limits.Processes > 0 && !spec.Unsafe && nprocPerUserNS()
	if spec.Limits != nil {
		t.processes = spec.Limits.Processes
	}
	// Fd puts the files into blocking mode; the command shares that mode.
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	err = t.sendFrame(frame, unix.UnixRights(fds...))
	runtime.KeepAlive(files)
	return err
}

// Signal asks the launcher to send sig ("SIGINT", "SIGTERM" or "SIGKILL") to
// the command's process group (the group of the command it started; not
// processes that left it). Once the command has exited it does nothing.
func (t *Tree) Signal(sig string) error {
	if _, ok := signalable[sig]; !ok {
		return fmt.Errorf("%w: the launcher does not send %q", ErrPolicy, sig)
	}
	frame, err := encodeFrame(&message{Type: msgSignal, Signal: sig})
	if err != nil {
		return err
	}
	select {
	case <-t.finished:
		return nil
	default:
	}
	if err := t.sendFrame(frame, nil); err != nil {
		select {
		case <-t.finished: // it ended meanwhile, and the control socket closed
			return nil
		default:
		}
		return err
	}
	return nil
}

// prepare asks an idle launcher to build what it can of a sandbox that extends
// base before its spec arrives (see prepared).
func (t *Tree) prepare(base *policy.Sandbox) error {
	frame, err := encodeFrame(&message{Type: msgPrepare, Base: base})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return t.sendFrame(frame, nil)
}

// sendFrame writes frame to the control socket, with rights (if any) on its
// first bytes.
func (t *Tree) sendFrame(frame, rights []byte) error {
	rc, err := t.ctl.SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: control socket: %w", ErrLauncher, err)
	}
	var sendErr error
	err = rc.Write(func(fd uintptr) bool {
		for len(frame) > 0 {
			n, err := unix.SendmsgN(int(fd), frame, rights, nil, unix.MSG_NOSIGNAL)
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // wait until writable
			case errors.Is(err, unix.EINTR):
				continue
			case err != nil:
				sendErr = err
				return true
			}
			frame, rights = frame[n:], nil // the descriptors went with the first bytes
		}
		return true
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return fmt.Errorf("%w: sending a frame: %w", ErrLauncher, err)
	}
	return nil
}

// launcherEnv is the launcher's whole environment (the command gets the spec's):
// Go runtime settings for a process that lives for one call (see goenv.Child),
// with a heap limit well inside the launcher's cgroup allowance (cgroupSlack),
// and NoNamespacesEnv when this process has it.
func launcherEnv() []string {
	if namespacesOff {
		return append(launcherEnvBase[:len(launcherEnvBase):len(launcherEnvBase)], NoNamespacesEnv+"=1")
	}
	return launcherEnvBase
}

var launcherEnvBase = goenv.Child("16MiB")

// usePidNamespace reports whether launchers get a pid namespace of their own:
// where this process may make one (CAP_SYS_ADMIN, or a user namespace made
// with it, see userns_linux.go), unless NoNamespacesEnv.
func usePidNamespace() bool { return launcherMode() != nsNone }

// pidNamespacesRefused is set when making a launcher's pid namespace failed.
var pidNamespacesRefused atomic.Bool

// run forks the launcher from a locked thread that lives until the launcher
// has exited: Pdeathsig fires when the forking thread dies, not the process.
// The lock is never released, so the thread exits with this goroutine.
func (t *Tree) run(exe string, files []uintptr, status *os.File, forked chan<- error) {
	runtime.LockOSThread()
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	mode := launcherMode()
	env := launcherEnv()
	if uid, _, drop := CommandCredential(); drop {
		env = append(env[:len(env):len(env)], dropUIDEnv+"="+strconv.Itoa(uid))
	}
	if h := hostTasksArg(); h != "" && mode == nsNone {
		env = append(env[:len(env):len(env)], h) // nprochost_linux.go
	}
	if t.pidns {
		// A pid namespace, and an IPC namespace, so that System V segments
		// and POSIX message queues die with the call.
		sys.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
		if mode == nsUser {
			t.userns = true // forkUserNSLauncher makes the namespaces
			env = append(env[:len(env):len(env)], userNSEnv+"=1")
		}
	}
	if n := len(files) - firstCgroupFD; n > 0 {
		env = append(env[:len(env):len(env)], launcherCgroupsEnv+"="+strconv.Itoa(n))
		if t.cmdcg != nil && t.cmdcg.pidsMax != nil {
			env = append(env, launcherPidsMaxEnv+"=1")
		}
	}
	attr := &syscall.ProcAttr{Env: env, Files: files, Sys: sys}
	var pid int
	var err error
	if t.userns {
		pid, err = forkUserNSLauncher(exe, []string{exe, "worker", roleExec}, env, files, sys.Pdeathsig)
	} else {
		pid, err = syscall.ForkExec(exe, []string{exe, "worker", roleExec}, attr)
	}
	if err != nil && t.pidns && mode == nsRoot && pidNamespaceRefused(err) {
		// A host (a container) that refuses pid namespaces to root: without.
		// Not for an error of the moment (nsfail_linux.go): that fails the call.
		pidNamespacesRefused.Store(true)
		t.pidns, sys.Cloneflags = false, 0
		if uid, _, drop := CommandCredential(); drop {
			attr.Env = append(attr.Env[:len(attr.Env):len(attr.Env)], dropUIDEnv+"="+strconv.Itoa(uid))
		}
		pid, err = syscall.ForkExec(exe, []string{exe, "worker", roleExec}, attr)
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
		m, err := readFrame(status)
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
		case msgPrepared:
			close(t.preparedCh) // the launcher sends it once, before any started frame
		case msgStarted:
			r.res.Started = true
			t.prepared, t.root = m.Prepared, m.PrivateRoot
			t.nprocLimit.Store(int64(m.Nproc))
			t.shmemBase.Store(t.cgroup.shmem() + 1)
			t.noteHostTasks(m.Nproc)
		case msgIPC:
			t.ipc.Store(m.IPC)
		case msgSpawnError:
			r.res.SpawnError, r.final = m.Error, true
		case msgExit:
			r.res.ExitCode, r.res.Signal, r.final = m.Code, m.Signal, true
			r.res.Lookups, r.res.UnixRefused = m.Lookups, m.UnixRefused
			if m.Usage != nil {
				r.res.Usage = *m.Usage
			}
		case msgError:
			r.final = true
			r.failure = &launcherError{msg: m.Error, sandbox: m.Kind == errKindSandbox}
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
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	r := <-reported // at EOF now: the launcher held the pipe's only write end
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
		n, err := killRound(root, true)
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

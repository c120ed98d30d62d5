package jail

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/goenv"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
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
	// namespace, or on the host's count: jail/launcher/nprochost_linux.go).
	nprocLimit atomic.Int64
	// processes is the spec's Limits.Processes (0: none), set before it is sent.
	processes int
	// ipc is the memory of the System V objects of the launcher's IPC
	// namespace, as it last reported (jail/launcher/ipcwatch_linux.go).
	ipc atomic.Int64
	// shmemBase is what the memory cgroup counted of tmpfs when the command
	// started (the private root's own files, placed by the launcher), plus
	// one; 0 before the start. The launcher reads it right before its fork
	// (wire.Message.ShmemBase): read here when the started frame comes, it
	// would hold what a quick command wrote meanwhile. See Shmem.
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
	byThread := cg.threadJoin() != nil // handed over to the launcher by fork
	t, err := fork(exe, cg, ccg)
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		ccg.remove()
		return nil, err
	}
	if cg != nil && !byThread {
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
	if f := cg.threadJoin(); f != nil {
		files = append(files, f.Fd()) // joined as the command's cgroups are
	}
	for _, f := range ccg.files() {
		files = append(files, f.Fd())
	}
	forked := make(chan error, 1)
	go t.run(exe, files, cg.statFile(), statusR, forked)
	err = <-forked
	cg.handedOver()
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
	m := &wire.Message{Type: wire.MsgSpec, Spec: spec}
	files := []*os.File{stdout, stderr}
	if in != nil {
		m.Stdin, m.Terminal = true, in.Terminal
		files = append([]*os.File{in.Stdin}, files...)
	}
	frame, err := wire.EncodeFrame(m)
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
	t.nproc = t.userns && (t.cmdcg == nil || t.cmdcg.pidsMax == nil) && spec.Limits != nil && spec.Limits.Processes > 0 && !spec.Unsafe && confine.NprocPerUserNS()
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
	if _, ok := wire.Signals[sig]; !ok {
		return fmt.Errorf("%w: the launcher does not send %q", ErrPolicy, sig)
	}
	frame, err := wire.EncodeFrame(&wire.Message{Type: wire.MsgSignal, Signal: sig})
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
	frame, err := wire.EncodeFrame(&wire.Message{Type: wire.MsgPrepare, Base: base})
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

package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/internal/proctree"
	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/seccomp"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// The launcher's inherited descriptors are wire.CtlFD and wire.StatusFD; see
// the diagram in jail/wire.
const (
	// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (Linux 5.11).
	closeRangeCloexec = 1 << 2

	// killPoll is how long the launcher waits for its reaper between kill
	// rounds.
	killPoll = 2 * time.Millisecond
)

// The launcher keeps itself out of its command's reach. One thread of it (see
// commandThread) builds the command's root, restricts itself and starts the
// command, and then exits, taking its Landlock domain with it: no thread left
// in the launcher shares the command's domain, so Landlock's scoping (ABI >=
// 6) refuses the command's signals to the launcher, and its ptrace rule any
// access to the launcher's /proc files. Where the supervisor could give it a
// pid namespace (root), the launcher is that namespace's init: the kernel
// drops the signals its command sends it that it has no handler for (SIGKILL
// and SIGSTOP included), and when the launcher dies, however it dies, the
// kernel kills every process in the namespace. The command is forked with
// the highest OOM score and the launcher keeps a low one (see oomAdjust), so
// the kernel's OOM killer takes the command's processes first.
func launch() int {
	// The main thread, whose id is the launcher's pid: never restricted. It
	// reaps and kills. The program's init locked it (launcher.Main checks).
	status := os.NewFile(wire.StatusFD, "status")
	fail := func(kind string, err error) int {
		_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgError, Kind: kind, Error: err.Error()})
		return 2
	}
	// Every descriptor from 3 up becomes close-on-exec, including any the
	// supervisor leaked to us, so the command inherits exactly 0, 1 and 2.
	// Marking instead of closing leaves the Go runtime's own fds alone.
	if err := unix.CloseRange(wire.CtlFD, ^uint(0), closeRangeCloexec); err != nil {
		return fail("", fmt.Errorf("close_range(CLOSE_RANGE_CLOEXEC), Linux >= 5.11: %w", err))
	}
	// Before the launcher stops being dumpable: from then on its /proc files
	// are root's, and an ordinary user could no longer open its own score.
	var oom oomAdjust
	oom.open()
	selfIO, _ := os.Open("/proc/self/io") // for treeUsage
	// Not dumpable: /proc/<launcher>/fd and mem need CAP_SYS_PTRACE, whatever
	// Landlock's rules (a command without scoping could otherwise forge status
	// frames through fd/4).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail("", fmt.Errorf("PR_SET_DUMPABLE: %w", err))
	}
	// Orphans anywhere below us are reparented to us instead of init, even
	// after setsid and a double fork, so killing "our descendants" is complete.
	// (In a pid namespace of our own we are init, which gets them anyway.)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("", fmt.Errorf("PR_SET_CHILD_SUBREAPER: %w", err))
	}
	stop := make(chan struct{})
	var stopOnce sync.Once
	requestStop := func() { stopOnce.Do(func() { close(stop) }) }
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	go func() { <-sig; requestStop() }()

	startedCh := make(chan started, 1)
	go commandThread(status, &oom, startedCh)
	st := <-startedCh
	pid := st.pid
	if pid == 0 {
		return st.exit // the command thread reported why
	}
	oom.settle()
	var fwd *forwarder
	if st.net != nil {
		fwd = &forwarder{socket: st.spec.ProxySocket, token: st.spec.ProxyToken, lookups: reported{max: maxLookups}}
		fwd.serve(st.net)
	}
	if st.guard != nil {
		go st.guard.serve()
	}
	servePorts(st.spec, pid, st.listeners) // ports_linux.go: a session's ports, and a call's
	stopIPC := watchIPC(status)
	ctl := os.NewFile(wire.CtlFD, "ctl")
	// A signal frame is passed on to the command's process group; anything
	// else, EOF (Kill closed it, or the supervisor died) or an error on the
	// control socket means: stop now.
	cmd := &command{pid: pid}
	go func() {
		for {
			m, err := wire.ReadFrame(ctl)
			if err != nil || m.Type != wire.MsgSignal {
				requestStop()
				return
			}
			cmd.signal(m.Signal)
		}
	}()
	// A stop request, or the command leaving processes behind, kills every
	// descendant, round after round, until reap has seen the last of them.
	empty := make(chan struct{})
	go func() {
		select {
		case <-stop:
			killUntilEmpty(empty)
		case <-empty:
		}
	}()
	ws := reap(cmd, requestStop)
	close(empty)
	stopIPC() // its frames are not written after the exit frame
	msg := &wire.Message{Type: wire.MsgExit, Lookups: fwd.names(), UnixRefused: st.guard.refusedTargets(), Usage: treeUsage(selfIO)}
	switch {
	case ws.Exited():
		msg.Code = ws.ExitStatus()
	case ws.Signaled():
		msg.Code, msg.Signal = -1, unix.SignalName(ws.Signal())
	}
	_ = wire.WriteFrame(status, msg)
	return 0
}

// started is what the command thread tells the main thread.
type started struct {
	// pid is the command's; 0 when there is none, once the reason was
	// reported (or there was none: a launcher released unused), and the
	// launcher exits with exit.
	pid   int
	exit  int
	net   *privateNet // the listeners of the command's private network, or nil
	spec  *policy.Command
	guard *unixGuard // the command's unix socket guard, or nil
	// listeners are the command's session ports' listeners (listenPorts),
	// for servePorts: the started channel hands them to the main thread.
	listeners []int
}

// cmdThread is what the launcher's command thread keeps from one step of its
// set-up to the next; it is the thread's alone (the main thread gets what it
// needs in started), and passed along instead of living in package variables.
type cmdThread struct {
	status *os.File
	// oom is the launcher's OOM score, opened by the main thread while the
	// launcher was dumpable; raised here before the fork, settled there.
	oom *oomAdjust
	// pidsMax is the command's pids.max (joinCmdCgroups), -1 if none.
	pidsMax int
	// nproc is the RLIMIT_NPROC applyNproc or applyHostNproc set, 0 if none:
	// the started frame tells the supervisor (see Tree.ProcessCeiling).
	nproc int
	// threadsWarm: warmThreads ran (a pooled launcher does it while it waits,
	// so that the call does not).
	threadsWarm bool
	// listeners are listenPorts', for started.
	listeners []int
	// shmemBase is the memory cgroup's tmpfs bytes right before the fork, plus
	// one (0: not read), for the started frame (see readShmem).
	shmemBase int64
}

// commandThread runs on a thread of its own, locked and never unlocked, so
// that the thread exits when it returns. It prepares what it can while the
// launcher waits for its spec, reads the spec, builds the command's root and
// network, restricts itself, starts the command from itself, and reports the
// start on status.
func commandThread(status *os.File, oom *oomAdjust, done chan<- started) {
	runtime.LockOSThread()
	if err := restrict.NotMainThread(); err != nil {
		_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgError, Kind: wire.KindSandbox, Error: fmt.Errorf("%w: %w", confine.ErrSandbox, err).Error()})
		done <- started{exit: 2}
		return
	}
	t := &cmdThread{status: status, oom: oom, pidsMax: joinCmdCgroups()}
	done <- t.startFromSpec()
}

func (t *cmdThread) startFromSpec() started {
	status := t.status
	fail := func(kind string, err error) started {
		_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgError, Kind: kind, Error: err.Error()})
		return started{exit: 2}
	}
	// Do what does not depend on the spec while waiting for it (a pooled
	// launcher waits long): probe the kernel, build the usual seccomp filter.
	confine.Probe()
	usual := seccomp.Options{StreamPairsOnly: !wantPrivateRoot(), Loopback: wantPrivateRoot(), GuardUnix: confine.UnixGuardAvailable(), AllowTracing: true}
	usual.Launcher, usual.LauncherThread = confine.LauncherSelf()
	_, _ = confine.SandboxFilter(usual)

	ctl := os.NewFile(wire.CtlFD, "ctl")
	m, fds, err := readControl(ctl)
	var pr *prepared
	if err == nil && m.Type == wire.MsgPrepare && m.Base != nil && len(fds) == 0 {
		pr = t.prepare(m.Base)
		defer pr.close()
		// Said, so that a pool (and its tests) can tell a launcher that is
		// ready from one still preparing.
		if err := wire.WriteFrame(status, &wire.Message{Type: wire.MsgPrepared}); err != nil {
			return fail("", fmt.Errorf("reporting prepared: %w", err))
		}
		m, fds, err = readControl(ctl)
	}
	if errors.Is(err, io.EOF) {
		return started{} // released before use
	}
	if err == nil {
		err = checkSpecFrame(m, fds)
	}
	if err != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return fail("", err)
	}
	pid, privateRoot, pnet, guard, spawnErr, err := t.startCommand(m.Spec, stdio(m, fds), pr)
	switch {
	case err != nil:
		return fail(wire.KindSandbox, err)
	case spawnErr != nil:
		_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgSpawnError, Error: spawnErr.Error()})
		return started{}
	}
	_ = wire.WriteFrame(status, &wire.Message{Type: wire.MsgStarted, Pid: pid, Prepared: pr.restricting().Used(), PrivateRoot: privateRoot, Nproc: t.nproc, ShmemBase: t.shmemBase})
	return started{pid: pid, net: pnet, spec: m.Spec, guard: guard, listeners: t.listeners}
}

// readControl reads a frame from the control socket, and the descriptors sent
// with its first bytes (a spec's stdout and stderr). io.EOF: the supervisor
// closed the socket first.
func readControl(ctl *os.File) (*wire.Message, []int, error) {
	var hdr [4]byte
	oob := make([]byte, unix.CmsgSpace(4*3))
	var n, oobn int
	var err error
	for {
		n, oobn, _, _, err = unix.Recvmsg(wire.CtlFD, hdr[:], oob, unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading control frame: %w", err)
	}
	if n == 0 {
		return nil, nil, io.EOF
	}
	var rights []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			fds, _ := unix.ParseUnixRights(&msgs[i])
			rights = append(rights, fds...)
		}
	}
	m, err := wire.ReadFrame(io.MultiReader(bytes.NewReader(hdr[:n]), ctl))
	if err != nil {
		return nil, rights, fmt.Errorf("reading control frame: %w", err)
	}
	return m, rights, nil
}

// checkSpecFrame checks that m is a spec with a command, sent with stdout and
// stderr, and stdin first if it says so.
func checkSpecFrame(m *wire.Message, fds []int) error {
	if m.Type != wire.MsgSpec || m.Spec == nil || len(m.Spec.Argv) == 0 {
		return fmt.Errorf("want a spec frame with a command, got %q", m.Type)
	}
	switch {
	case m.Stdin && len(fds) != 3:
		return fmt.Errorf("spec came with %d descriptors, want stdin, stdout and stderr", len(fds))
	case !m.Stdin && len(fds) != 2:
		return fmt.Errorf("spec came with %d descriptors, want stdout and stderr", len(fds))
	case m.Terminal && !m.Stdin:
		return errors.New("a spec for a terminal came without it")
	}
	return nil
}

// startCommand builds the command's root (see isolate), restricts the calling
// thread (locked, for good) with what was prepared for it (pr, may be nil),
// and starts the command from it. err reports a failure of the sandbox's
// set-up, which may leave the thread partly restricted; spawnErr a command
// that could not be started.
func (t *cmdThread) startCommand(spec *policy.Command, cio commandIO, pr *prepared) (pid int, privateRoot bool, pnet *privateNet, guard *unixGuard, spawnErr, err error) {
	// The command has its own copies once started. Closing ours means the
	// supervisor sees end-of-file as soon as the command's tree is gone, not
	// when the launcher exits.
	defer cio.close()
	loopback := false
	var placed []string
	if !spec.Unsafe {
		if pnet, loopback, err = isolateNet(&spec.Sandbox, pr.network()); err != nil {
			return 0, false, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
		}
		if privateRoot, placed, err = isolate(&spec.Sandbox, pr, pnet != nil); err != nil {
			return 0, false, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
		}
	}
	if !privateRoot {
		// The mounts are at their host paths: the caller's paths are rewritten
		// to them (policy.Place).
		policy.RewriteCommand(spec)
		ownCgroupRules(&spec.Sandbox) // cgroupview_linux.go
	}
	if t.listeners, err = listenPorts(spec, !spec.Unsafe && (pnet != nil || loopback)); err != nil { // ports_linux.go
		return 0, privateRoot, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
	}
	// Looked up in the root the command gets, with its mounts in place.
	path, err := lookPath(spec)
	if err != nil {
		return 0, privateRoot, nil, nil, err, nil
	}
	t.oom.raise() // before the restriction: /proc/self is read-only after it
	if !spec.Unsafe {
		sb := &spec.Sandbox
		if privateRoot {
			sb = privateRootRules(sb, placed)
		}
		var gfds guardFDs
		guarded := confine.UnixGuardAvailable()
		if guarded {
			// Opened in the command's root and network, for the guard on the
			// main thread (unixguard_linux.go).
			if gfds, err = openGuardFDs(); err != nil {
				return 0, privateRoot, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
			}
		}
		listener, err := confine.Restrict(sb, pr.restricting(), placed, privateRoot, loopback, true, guarded)
		if err != nil {
			gfds.close()
			return 0, privateRoot, nil, nil, nil, err
		}
		if listener >= 0 {
			guard = newUnixGuard(listener, gfds, pnet != nil || loopback)
		}
	}
	// Last, as they bind the launcher too (see applyRlimits).
	if err := applyRlimits(spec.Limits); err != nil {
		return 0, privateRoot, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
	}
	if err := t.applyNproc(spec.Limits); err != nil {
		return 0, privateRoot, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
	}
	if err := t.applyHostNproc(spec.Limits); err != nil { // nprochost_linux.go
		return 0, privateRoot, nil, nil, nil, fmt.Errorf("%w: %w", confine.ErrSandbox, err)
	}
	env := spec.Env
	if env == nil {
		env = []string{}
	}
	if privateRoot && spec.Sandbox.Tmp != "" {
		env = rootEnv(env, spec.Sandbox.Tmp) // rootdev_linux.go
	}
	t.shmemBase = readShmem() // last before the fork: the root's files are all placed
	// No Pdeathsig: it would be tied to this thread, which exits next. If the
	// launcher dies, its pid namespace takes the command along, or the
	// supervisor's sweep does.
	attr := &syscall.ProcAttr{Dir: spec.Dir, Env: env, Files: cio.files(), Sys: cio.sysProcAttr()}
	pid, err = t.forkUnderHostNproc(func() (int, error) { return syscall.ForkExec(path, spec.Argv, attr) }) // nprochost_linux.go
	if err != nil {
		return 0, privateRoot, nil, nil, fmt.Errorf("exec %s: %w", path, err), nil
	}
	lowerPidsMax(t.pidsMax, spec.Limits)
	return pid, privateRoot, pnet, guard, nil, nil
}

// reap collects every child until none is left, and returns the command's
// wait status. ECHILD means no children and therefore no descendants: an
// orphan is always reparented to us. If the command leaves processes behind,
// reap calls leftover (to have them killed) and goes on. The command is marked
// gone before it is reaped (see command.signal).
func reap(cmd *command, leftover func()) unix.WaitStatus {
	var ws, status unix.WaitStatus
	flags := 0
	for {
		pid, err := cmd.wait(&ws, flags)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return status
		case pid == cmd.pid:
			status = ws
			// Usually the command leaves nothing behind; finding that out
			// here spares the common case a scan of /proc.
			flags = unix.WNOHANG
		case pid == 0: // children left after the command
			leftover()
			flags = 0
		}
	}
}

// killUntilEmpty SIGKILLs the launcher's descendants, round after round,
// until the reaper has seen the last of them. As the init of a pid namespace
// the launcher kills every other process in it, whatever their ancestry.
func killUntilEmpty(empty <-chan struct{}) {
	self := os.Getpid()
	for {
		if self == 1 {
			_ = unix.Kill(-1, unix.SIGKILL)
		} else {
			_, _ = proctree.KillRound(self, false)
		}
		select {
		case <-empty:
			return
		case <-time.After(killPoll):
		}
	}
}

// defaultPath is searched when the command's environment has no PATH, as
// seatbelt does on macOS (and execvp does).
const defaultPath = "/usr/bin:/bin"

// lookPath resolves a bare command name with the PATH of the command's own
// environment. Relative PATH entries are skipped: they would resolve against
// a directory the caller did not choose.
func lookPath(spec *policy.Command) (string, error) {
	name := spec.Argv[0]
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathEnv := defaultPath
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mode&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

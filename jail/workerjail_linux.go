package jail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/seccomp"
	"github.com/autobox-dev/autobox/policy"
)

// The JS worker's jail. A worker runs code a model wrote in the V8 v8go
// links (10.9, 2022: see SECURITY.md), so it is built for a script that has
// turned into native code in the worker. In the order a worker meets them:
//
//  1. The spawner thread (WorkerSpawner.Restrict, on a thread of the server,
//     never its main one, that exits once the worker runs): capabilities
//     dropped, no_new_privs, Landlock allowing only to read and execute the
//     autobox binary and the libraries it maps.
//  2. The fork (WorkerSpawner.Start): the child is made in a user and a pid
//     namespace of its own where the host allows it (see probeNamespaces),
//     unmapped: inside it is uid 65534 with no capability after its exec, the
//     only process in its pid namespace, and so can name no other process,
//     and (for an ordinary user) has at most WorkerMaxThreads threads.
//     It leads a session of its own, and loads the sandbox filter of
//     commands (seccomp.Sandbox: no namespaces, no ptrace, no sockets but
//     unix pairs, ...) right before it execs the worker.
//  3. In the worker, before it reads anything from the supervisor
//     (restrict.EnterWorker): the worker's allow-list (seccomp.Worker), on every
//     thread at once (SECCOMP_FILTER_FLAG_TSYNC: V8 starts threads while
//     the package initialises). No exec, no open, no socket, no fork: threads
//     only, signals to itself only. A refused call is reported on stderr
//     (WorkerRefusals reads the reports back).
//
// Everything a worker can reach is then its pipes to the supervisor, whose
// bridge checks every request, and its own memory and CPU within the
// supervisor's limits.

// WorkerSpawner starts JS workers in their jail. Safe for concurrent use.
type WorkerSpawner struct {
	p      *policy.Sandbox
	filter []unix.SockFilter // the sandbox filter, loaded by the child
	ns     workerNS
}

// workerNS is whether workers get namespaces of their own.
type workerNS struct {
	flags int    // clone flags: 0 without namespaces
	why   string // without: why not, and what would give them
}

// NewWorkerSpawner checks that this host can jail JS workers run from exe,
// which may then read and execute exe and what the loader maps to start it
// (workerFiles) and nothing else, and finds out whether they get namespaces.
// It returns an error wrapping ErrUnsupported where the host cannot jail
// them.
func NewWorkerSpawner(exe string) (*WorkerSpawner, error) {
	files, err := workerFiles(exe)
	if err != nil {
		return nil, err
	}
	p := &policy.Sandbox{ReadOnly: append(files, "/etc/ld.so.cache"), AllowExec: true}
	if err := Probe().Check(p); err != nil {
		return nil, err
	}
	// What restrictThreadExceptSeccomp builds for p: no network, and the
	// host's root (so unix socket pairs are stream or seqpacket pairs only).
	filter, err := confine.SandboxFilter(seccomp.Options{StreamPairsOnly: true})
	if err != nil {
		return nil, err
	}
	s := &WorkerSpawner{p: p, filter: filter}
	if s.ns, err = s.probeNamespaces(); err != nil {
		return nil, err
	}
	return s, nil
}

// Restrict confines the calling thread as a worker's parent: capabilities
// dropped, no_new_privs and Landlock (the seccomp filter is the child's, see
// Start). The caller holds runtime.LockOSThread and never unlocks: the
// thread is retired with its goroutine. It refuses the main thread, which Go
// would wedge, restricted, instead of retiring it (restrict.OffMainThread;
// restrict.RunOffMainThread finds another). If the error wraps ErrSandbox the
// thread may be partly restricted.
func (s *WorkerSpawner) Restrict() error {
	if err := restrict.OffMainThread(); err != nil {
		return fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	_, err := confine.RestrictExceptSeccomp(s.p, nil, nil, seccomp.Options{StreamPairsOnly: true}, false)
	return err
}

// Start starts exe with argv and env as a JS worker, files as its
// descriptors 0..n-1, from a thread Restrict confined. It returns the
// worker's pid. A failure to make the namespaces that the host allowed at
// start-up fails this start only.
func (s *WorkerSpawner) Start(exe string, argv, env []string, files []uintptr) (int, error) {
	spec := &vforkSpec{exe: exe, argv: argv, env: env, files: files, cloneflags: s.ns.flags, filter: s.filter, closeOthers: true}
	if s.ns.flags != 0 && unix.Geteuid() != 0 {
		// In a user namespace of its own the kernel counts the worker's tasks
		// alone against RLIMIT_NPROC (since Linux 5.14), so the limit bounds its
		// threads: code that broke out of V8 cannot take the host's pids. Root's
		// tasks are exempt; without a namespace the count would be the user's.
		spec.nproc = WorkerMaxThreads
	}
	return vforkExec(spec)
}

// WorkerMaxThreads bounds a worker's threads where the kernel can (see Start):
// V8's platform pool (at most 16) and Go's threads need a few dozen.
const WorkerMaxThreads = 512

// Isolation names the mode workers run in, as Isolation does for commands:
// ModeRoot or ModeUserNS (a user and pid namespace of their own), or
// ModeLandlock.
func (s *WorkerSpawner) Isolation() string {
	switch {
	case s.ns.flags == 0:
		return ModeLandlock
	case confine.HasCapSysAdmin():
		return ModeRoot
	}
	return ModeUserNS
}

// NoNamespacesWhy says why workers get no namespaces ("" when they do).
func (s *WorkerSpawner) NoNamespacesWhy() string { return s.ns.why }

// workerNSFlags are the namespaces a worker is made in.
const workerNSFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWPID

// probeNamespaces makes, from a thread confined as a spawner is, a child in
// the namespaces workers get, which exits at once. A refusal means workers
// run without namespaces (said in doctor and in results); an error that may
// pass (EAGAIN and ENOMEM, which a fork bomb next door causes) is tried
// again and then fails: it never decides the mode.
func (s *WorkerSpawner) probeNamespaces() (workerNS, error) {
	if namespacesOff {
		return workerNS{why: NoNamespacesEnv + "=1 turned them off"}, nil
	}
	var err error
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		}
		restrict.RunOffMainThread(func() {
			if err = s.Restrict(); err == nil {
				err = cloneProbe(workerNSFlags)
			}
		})
		switch {
		case err == nil:
			return workerNS{flags: workerNSFlags}, nil
		case errors.Is(err, ErrSandbox):
			return workerNS{}, err
		case !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.ENOMEM) && !errors.Is(err, unix.EINTR):
			why := "the kernel refused a user and pid namespace: " + err.Error()
			if fix := userNSFix(); fix != "" {
				why += ". To allow them: " + fix
			}
			return workerNS{why: why}, nil
		}
	}
	return workerNS{}, fmt.Errorf("making a JS worker's namespaces: %w (tried 5 times)", err)
}

// WorkerRefusals returns the system calls a worker's stderr reports its
// filter refused, by name, each once, in the order first reported.
func WorkerRefusals(stderr []byte) []string {
	arch, ok := seccomp.ArchFor(runtime.GOARCH)
	if !ok || !bytes.Contains(stderr, []byte(restrict.RefusedPrefix)) {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), restrict.RefusedPrefix)
		if !ok {
			continue
		}
		nr, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 32)
		if err != nil {
			continue
		}
		if name := seccomp.SyscallName(arch, uint32(nr)); !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// vforkSpec is a child for vforkExec (usernsfork_linux.go): a launcher or a
// JS worker.
type vforkSpec struct {
	exe         string
	argv, env   []string
	files       []uintptr // become the child's descriptors 0..n-1
	cloneflags  int       // namespaces to make (CLONE_VM, CLONE_VFORK and SIGCHLD are added)
	mapIDs      bool      // map the caller's uid and gid to themselves in the new user namespace
	caps        []uintptr // raised as ambient capabilities
	pdeathsig   syscall.Signal
	filter      []unix.SockFilter // installed right before the exec
	closeOthers bool              // no descriptor but files reaches the child
	nproc       uint64            // RLIMIT_NPROC of the child (0: unchanged)
}

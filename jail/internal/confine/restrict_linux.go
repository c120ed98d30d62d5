package confine

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/seccomp"
	"github.com/autobox-dev/autobox/policy"
)

// RestrictThread drops every capability, then applies no_new_privs, a Landlock
// ruleset built from p and a seccomp filter built from p to the calling OS thread only; processes it
// starts afterwards inherit all three. The caller must hold
// runtime.LockOSThread and never unlock: the thread is then used only by the
// calling goroutine and dies with it. Without network, unix socket pairs are
// stream or seqpacket pairs only (see seccomp.Options.StreamPairsOnly): the
// thread's root is the host's.
//
// Everything that can fail harmlessly (Check, opening the paths, building the
// filter) happens first. If an error wraps ErrSandbox the thread may be
// partly restricted and must not be used for anything else.
func RestrictThread(p *policy.Sandbox) error {
	_, err := Restrict(p, nil, nil, false, false, false, false)
	return err
}

// Restrict is RestrictThread with what a pooled launcher prepared (nil:
// nothing); privateRoot says the thread's root holds only p's paths (the
// launcher's private root); guarded that its unix sockets are to be its own,
// guarded (the launcher's unix socket guard): Restrict then returns the
// guard's seccomp listener, else -1; placed are the files the call put in that
// root over base paths (see Prepared.ruleset); tracing allows ptrace of its
// own processes (a command's, not a JS worker's); loopback says it is in a
// network namespace of its own with loopback alone, where a command without
// network may use TCP and UDP sockets (they reach nothing outside it).
func Restrict(p *policy.Sandbox, pr *Prepared, placed []string, privateRoot, loopback, tracing, guarded bool) (int, error) {
	loopback = loopback && !p.AllowNetwork
	o := seccomp.Options{AllowNetwork: p.AllowNetwork, PrivateNetwork: p.AllowNetwork && p.PrivateNetwork, StreamPairsOnly: !privateRoot, Loopback: loopback, GuardUnix: guarded, AllowTracing: tracing}
	o.Launcher, o.LauncherThread = LauncherSelf()
	filter, err := RestrictExceptSeccomp(p, pr, placed, o, loopback)
	if err != nil {
		return -1, err
	}
	if !o.GuardUnix {
		if _, err := restrict.LoadFilter(filter, 0); err != nil {
			return -1, fmt.Errorf("%w: %w", ErrSandbox, err)
		}
		return -1, nil
	}
	// Once the guard has taken a connect, its caller waits for the answer
	// through any signal but a fatal one (Linux 5.19): the connect done on
	// its behalf is not repeated by a restarted call.
	listener, err := restrict.LoadFilter(filter, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	if errors.Is(err, unix.EINVAL) {
		listener, err = restrict.LoadFilter(filter, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	}
	if err != nil {
		return -1, fmt.Errorf("%w: a seccomp filter with a listener for the unix socket guard: %w", ErrSandbox, err)
	}
	return listener, nil
}

// RestrictExceptSeccomp is Restrict but for its last step: it
// returns the seccomp filter of o for the caller to load (a JS worker's
// spawner has its child load it, after the namespaces are made).
func RestrictExceptSeccomp(p *policy.Sandbox, pr *Prepared, placed []string, o seccomp.Options, loopback bool) ([]unix.SockFilter, error) {
	st := Probe()
	if err := st.Check(p); err != nil {
		return nil, err
	}
	filter, err := SandboxFilter(o)
	if err != nil {
		return nil, err
	}
	ruleset, err := pr.ruleset(p, st.LandlockABI, loopback, placed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	defer unix.Close(ruleset)

	if err := dropUID(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	if err := dropCapabilities(pr.isBounded()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("%w: PR_SET_NO_NEW_PRIVS: %w", ErrSandbox, err)
	}
	if err := landlockRestrict(ruleset); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	return filter, nil
}

// LauncherSelf is what the filter of a command forked from the calling thread
// refuses signals to (seccomp.Options.Launcher): this process and this thread,
// as the command will see them (Restrict is the launcher's command thread's).
func LauncherSelf() (pid, tid int) { return unix.Getpid(), unix.Gettid() }

// SandboxFilter returns the seccomp filter RestrictThread loads for o, built
// once for each o (the launcher builds the usual one while it waits for its
// spec).
func SandboxFilter(o seccomp.Options) ([]unix.SockFilter, error) {
	if o.AllowNetwork {
		o = seccomp.Options{AllowNetwork: true, PrivateNetwork: o.PrivateNetwork, GuardUnix: o.GuardUnix, AllowTracing: o.AllowTracing, Launcher: o.Launcher, LauncherThread: o.LauncherThread}
	}
	f, _ := sandboxFilters.LoadOrStore(o, sync.OnceValues(func() ([]unix.SockFilter, error) { return buildSandboxFilter(o) }))
	return f.(func() ([]unix.SockFilter, error))()
}

var sandboxFilters sync.Map // seccomp.Options → func() ([]unix.SockFilter, error)

func buildSandboxFilter(o seccomp.Options) ([]unix.SockFilter, error) {
	arch, ok := seccomp.ArchFor(runtime.GOARCH)
	if !ok {
		return nil, fmt.Errorf("%w: no seccomp filter for %s", ErrUnsupported, runtime.GOARCH)
	}
	raw, err := seccomp.Sandbox(arch, o)
	if err != nil {
		return nil, fmt.Errorf("%w: building seccomp filter: %w", ErrSandbox, err)
	}
	return restrict.SockFilter(raw), nil
}

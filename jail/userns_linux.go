package jail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/launcherbin"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
)

// User namespaces: how an ordinary user's server gets what a root server gets.
//
// A root server's launchers are forked with CLONE_NEWPID and then build the
// command's mount and network namespaces on one of their threads, which
// needs CAP_SYS_ADMIN. An ordinary user has no capability on the host, and a
// threaded Go process cannot unshare(CLONE_NEWUSER) itself. But a new process
// can be created in a new user namespace: the launcher is forked with
// CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWIPC, the user's own uid and gid mapped
// to themselves (the only mapping an unprivileged process may write), and the
// capabilities it needs inside raised as ambient ones so that they survive
// its exec (launcherCaps). Inside its user namespace the launcher then holds
// CAP_SYS_ADMIN over the namespaces it owns, and the root server's code paths
// run unchanged: the private root, the pid namespace with the launcher as
// init, the network namespace with the proxy behind it. Those capabilities
// give nothing over the host: a user namespace's capabilities apply to the
// objects it owns (its mount, network, pid and IPC namespaces) and to files
// whose owner is mapped in it, which are the user's own already.
//
// The command keeps the user's uid, drops every capability (bounding, ambient
// and effective sets emptied, securebits locked) and may not make user
// namespaces of its own (seccomp refuses every namespace flag). Because each
// call has a user namespace of its own, RLIMIT_NPROC, which the kernel counts
// per user in each user namespace since Linux 5.14, counts the call's tasks
// alone and becomes the call's process limit (see nprocLimit).
//
// Whether this works is found out once, by forking a probe launcher that
// does what a real one does (probeUserNamespaces): hosts refuse it in several
// ways (user.max_user_namespaces=0, a container's seccomp profile, Ubuntu's
// AppArmor restriction, which lets the namespace be made but takes its
// capabilities away). Where it fails, launchers run without namespaces, and
// doctor and every result say so.

// nsMode is how this process's launchers are isolated from the host.
type nsMode int

const (
	// nsNone: Landlock and seccomp on the host's filesystem and network.
	nsNone nsMode = iota
	// nsRoot: this process holds CAP_SYS_ADMIN; launchers get a pid and an
	// IPC namespace at their fork and make the rest themselves.
	nsRoot
	// nsUser: launchers are forked into a user namespace of their own too.
	nsUser
)

// launcherCaps are the capabilities a user-namespace launcher keeps across
// its exec, inside its namespace: CAP_SYS_ADMIN for the mount namespace,
// the private root and /proc; CAP_NET_ADMIN to bring loopback up in its
// network namespace; CAP_NET_BIND_SERVICE for its resolver's port 53 there;
// CAP_SETPCAP to empty the bounding set before its command
// starts.
var launcherCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}

// launcherMode is the mode of the launchers this process starts.
func launcherMode() nsMode {
	switch {
	case namespacesOff:
		return nsNone
	case confine.HasCapSysAdmin():
		if pidNamespacesRefused.Load() {
			return nsNone
		}
		return nsRoot
	case userNS().err == nil:
		return nsUser
	case transientForkError(userNS().err):
		// The probe met an error of the moment (not kept: probed again next
		// time); the call's own fork fails with it, or succeeds.
		return nsUser
	}
	return nsNone
}

// ModeName is the name of launcherMode, for results and doctor.
func ModeName() string {
	switch launcherMode() {
	case nsRoot:
		return ModeRoot
	case nsUser:
		return ModeUserNS
	}
	return ModeLandlock
}

// UserNamespaces reports whether this process's launchers could be made in
// user namespaces, and if not, why not and what would fix it on this host.
func UserNamespaces() (ok bool, why, fix string) {
	r := userNS()
	if r.err == nil {
		return true, "", ""
	}
	return false, r.err.Error(), r.fix
}

type userNSResult struct {
	err error
	fix string
}

// userNS probes whether launchers can be made in user namespaces: once, but
// again after an error of the moment (nsfail_linux.go), which is not kept.
func userNS() userNSResult {
	userNSProbe.mu.Lock()
	defer userNSProbe.mu.Unlock()
	if userNSProbe.done {
		return userNSProbe.r
	}
	r := probeUserNS()
	if !transientForkError(r.err) {
		userNSProbe.r, userNSProbe.done = r, true
	}
	return r
}

var userNSProbe struct {
	mu   sync.Mutex
	done bool
	r    userNSResult
}

func probeUserNS() userNSResult {
	if confine.HasCapSysAdmin() {
		return userNSResult{err: errors.New("not needed: this process holds CAP_SYS_ADMIN")}
	}
	exe, err := os.Executable()
	if err != nil {
		return userNSResult{err: fmt.Errorf("finding this program: %w", err)}
	}
	if err := probeUserNamespaces(exe); err != nil {
		return userNSResult{err: err, fix: userNSFix()}
	}
	return userNSResult{}
}

// userNSAttr is what forks a launcher into a user namespace of its own: the
// caller's uid and gid mapped to themselves, setgroups denied (an
// unprivileged process may map its gid only so), launcherCaps kept.
func userNSAttr(sys *syscall.SysProcAttr) {
	uid, gid := os.Getuid(), os.Getgid()
	sys.Cloneflags |= syscall.CLONE_NEWUSER
	sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	sys.GidMappingsEnableSetgroups = false
	sys.AmbientCaps = launcherCaps
}

// probeUserNamespaces forks exe as a launcher is forked (forkUserNSLauncher)
// and has it do what a launcher does with its namespaces (probeInside).
func probeUserNamespaces(exe string) error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	type ended struct {
		ws  unix.WaitStatus
		err error
	}
	done := make(chan ended, 1)
	go func() {
		// Pdeathsig is the forking thread's: locked until the probe is
		// reaped, and never unlocked, so that the thread ends with it.
		runtime.LockOSThread()
		start := func(path string) (int, error) {
			return forkUserNSLauncher(path, []string{exe, "worker", wire.RoleUserNSProbe}, []string{wire.UserNSEnv + "=1"}, []uintptr{null.Fd(), w.Fd(), w.Fd()}, syscall.SIGKILL)
		}
		path := launcherbin.Path(exe) // exe's small launcher, where it carries one
		pid, err := start(path)
		if err != nil && launcherbin.Retry(path, exe, err) {
			pid, err = start(exe)
		}
		w.Close()
		if err != nil {
			done <- ended{err: err}
			return
		}
		var ws unix.WaitStatus
		for {
			if _, err = unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		done <- ended{ws: ws, err: err}
	}()
	out, _ := io.ReadAll(io.LimitReader(r, 4096))
	e := <-done
	switch {
	case e.err != nil:
		return fmt.Errorf("clone(CLONE_NEWUSER) refused: %w", e.err)
	case e.ws.Exited() && e.ws.ExitStatus() == 0:
		return nil
	case len(bytes.TrimSpace(out)) > 0:
		return errors.New(string(bytes.TrimSpace(out)))
	}
	return fmt.Errorf("the probe launcher ended with status %v", e.ws)
}

// runProbe runs a probe child (its SysProcAttr with Pdeathsig set) to its
// end and returns nil, or what the probe said on its output as the error
// (the start's own error, wrapped, if it said nothing).
func runProbe(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	done := make(chan error, 1)
	// Pdeathsig is the forking thread's: keep it until the probe is reaped.
	go func() {
		runtime.LockOSThread()
		done <- cmd.Run()
	}()
	err := <-done
	if err == nil {
		return nil
	}
	if msg := strings.TrimSpace(out.String()); msg != "" {
		return errors.New(msg)
	}
	return err
}

// userNSFix is the one-time change that lets this host give an ordinary
// user's launchers user namespaces, or "" where none is known.
func userNSFix() string {
	if fix := ContainerFix(); fix != "" {
		return fix
	}
	if b, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(b)) == "1" {
		exe, _ := os.Executable()
		return "AppArmor restricts unprivileged user namespaces on this host; allow them for autobox alone with a profile (as Ubuntu ships for bubblewrap), as root:\n" +
			"  printf 'abi <abi/4.0>,\\ninclude <tunables/global>\\nprofile autobox " + exe + " flags=(unconfined) {\\n  userns,\\n}\\n' > /etc/apparmor.d/autobox\n" +
			"  apparmor_parser -r /etc/apparmor.d/autobox"
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "user.max_user_namespaces is 0; as root: sysctl -w user.max_user_namespaces=15000 (and in /etc/sysctl.d to keep it)"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return "kernel.unprivileged_userns_clone is 0; as root: sysctl -w kernel.unprivileged_userns_clone=1 (and in /etc/sysctl.d to keep it)"
	}
	return ""
}

// NoNamespacesWhy says why this process's launchers get no namespaces, and
// what would give them some, for errors that refuse what needs them.
func NoNamespacesWhy() string {
	switch {
	case namespacesOff:
		return NoNamespacesEnv + "=1 turned them off"
	case confine.HasCapSysAdmin():
		why := "this host refuses a pid namespace even to root"
		if fix := ContainerFix(); fix != "" {
			why += ": " + fix
		}
		return why
	}
	why := "it runs as uid " + fmt.Sprint(os.Getuid()) + ", and user namespaces are refused here: " + userNS().err.Error()
	if fix := userNS().fix; fix != "" {
		why += ". To allow them: " + fix
	}
	return why
}

// wholeNetworkInUserNS reports whether spec wants the host's network from a
// user-namespace launcher, which a launcher prepared with a network namespace
// of its own cannot give (setns back to the host's needs CAP_SYS_ADMIN over
// it): such a spec gets a launcher that never left the host's network.
func wholeNetworkInUserNS(spec *Spec) bool {
	return launcherMode() == nsUser && !spec.Unsafe && spec.Sandbox.AllowNetwork && !spec.Sandbox.PrivateNetwork
}

// ProcessCeiling is, where RLIMIT_NPROC holds the tree to its process limit
// without counting refused forks (ForksRefused is -1), the most tasks the
// tree can have now: the limit less the launcher's own threads, which count
// against it in the call's user namespace (/proc/<pid>/status is readable
// whatever the launcher's dumpable flag). 0 when unknown.
func (t *Tree) ProcessCeiling() int {
	n := int(t.nprocLimit.Load())
	if n == 0 {
		return 0
	}
	if !t.userns {
		return t.hostCeiling() // jail/launcher/nprochost_linux.go
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(t.pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0
			}
			return n - threads
		}
	}
	return 0
}

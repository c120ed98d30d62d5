package jail

import (
	"errors"
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// Sentinel errors that callers branch on.
var (
	// ErrUnsupported: this host cannot enforce what the policy needs (no
	// Landlock, an old Landlock ABI, no seccomp, an unsupported platform).
	ErrUnsupported = restrict.ErrUnsupported
	// ErrPolicy: the policy cannot be expressed (for example a DenyWrite
	// path beneath a ReadWrite path, which Landlock cannot subtract).
	ErrPolicy = errors.New("jail: policy cannot be enforced as written")
	// ErrSandbox: applying the restrictions failed in the launcher.
	ErrSandbox = restrict.ErrSandbox
	// ErrLauncher: the launcher failed or died without reporting the
	// command's exit status.
	ErrLauncher = errors.New("jail: launcher failed")
	// ErrCommandAccess: the uid commands run as (CommandCredential) cannot
	// reach, read or write a path a call mounts.
	ErrCommandAccess = errors.New("the commands' uid cannot use this path")
)

// Landlock ABI versions that matter here (Documentation/userspace-api/landlock.rst).
const (
	abiRefer    = 2 // LANDLOCK_ACCESS_FS_REFER
	abiTruncate = 3 // LANDLOCK_ACCESS_FS_TRUNCATE
	abiNet      = 4 // LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP
	abiIoctlDev = 5 // LANDLOCK_ACCESS_FS_IOCTL_DEV
	abiScope    = 6 // LANDLOCK_SCOPE_{SIGNAL,ABSTRACT_UNIX_SOCKET}

	// MinLandlockABI is the oldest ABI the jail runs with: below 3 a
	// sandboxed process could truncate any file it can read (truncate(2) and
	// open(O_RDONLY|O_TRUNC) are not covered), so read-only would not mean
	// read-only.
	MinLandlockABI = abiTruncate
)

// Status is what this host can enforce, for `autobox doctor` and for the
// fail-closed check before every sandboxed start.
type Status struct {
	// LandlockABI is the Landlock ABI version, 0 when Landlock is missing.
	LandlockABI int
	// Landlock says why Landlock is missing ("" when present).
	Landlock string
	// Seccomp is true when seccomp filters with SECCOMP_RET_ERRNO work.
	Seccomp bool
	// SeccompArch is the architecture the filter is built for ("x86_64",
	// "aarch64"); "" when the jail has no syscall table for this CPU.
	SeccompArch string
	// NoNewPrivs is true when PR_SET_NO_NEW_PRIVS is available.
	NoNewPrivs bool
	// Platform is GOOS/GOARCH, for messages.
	Platform string
}

// TCPDenied reports whether Landlock itself denies TCP bind/connect; without
// it seccomp still refuses to create non-AF_UNIX sockets.
func (s Status) TCPDenied() bool { return s.LandlockABI >= abiNet }

// Scoped reports whether signals and abstract unix sockets are confined to
// the sandbox (Landlock scoping). Below ABI 6 they are not, and Check does not
// refuse: the filesystem and network rules still hold.
func (s Status) Scoped() bool { return s.LandlockABI >= abiScope }

// String is a one-line summary for `autobox doctor`.
func (s Status) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", s.Platform)
	if s.LandlockABI == 0 {
		fmt.Fprintf(&b, "Landlock missing (%s)", s.Landlock)
	} else {
		fmt.Fprintf(&b, "Landlock ABI %d (tcp deny %v, signal/abstract-socket scoping %v)", s.LandlockABI, s.TCPDenied(), s.Scoped())
	}
	fmt.Fprintf(&b, ", seccomp %v (%s), no_new_privs %v", s.Seccomp, s.SeccompArch, s.NoNewPrivs)
	return b.String()
}

// Check returns nil if p can be enforced on this host, otherwise an error
// naming everything that is missing (wrapping ErrUnsupported) or what in p
// cannot be expressed (wrapping ErrPolicy).
func (s Status) Check(p *policy.Sandbox) error {
	if p == nil {
		return fmt.Errorf("%w: nil sandbox policy", ErrPolicy)
	}
	if err := checkPolicy(p); err != nil {
		return err
	}
	var missing []string
	switch {
	case s.LandlockABI == 0:
		missing = append(missing, fmt.Sprintf("Landlock is not available (%s)", s.Landlock))
	case s.LandlockABI < MinLandlockABI:
		missing = append(missing, fmt.Sprintf("Landlock ABI %d < %d needed to deny truncating read-only files (Linux >= 6.2)", s.LandlockABI, MinLandlockABI))
	}
	if !s.Seccomp {
		missing = append(missing, "seccomp filters are not available")
	}
	if s.SeccompArch == "" {
		missing = append(missing, fmt.Sprintf("no seccomp syscall table for %s", s.Platform))
	}
	if !s.NoNewPrivs {
		missing = append(missing, "PR_SET_NO_NEW_PRIVS is not available")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrUnsupported, strings.Join(missing, "; "))
	}
	return nil
}

// checkPolicy rejects what Landlock cannot express: it can only add rights,
// so a DenyWrite path beneath (or equal to) a ReadWrite path would be writable.
func checkPolicy(p *policy.Sandbox) error {
	for _, d := range p.DenyWrite {
		for _, rw := range p.ReadWrite {
			if policy.Within(d, rw) {
				return fmt.Errorf("%w: DenyWrite %s is inside ReadWrite %s", ErrPolicy, d, rw)
			}
		}
	}
	for _, list := range [][]string{p.ReadOnly, p.ReadWrite, p.DenyWrite, p.Devices} {
		for _, path := range list {
			if !strings.HasPrefix(path, "/") {
				return fmt.Errorf("%w: path %q is not absolute", ErrPolicy, path)
			}
		}
	}
	return nil
}

// Isolation is what this process's launchers add to Landlock and seccomp, as
// `autobox doctor` reports it.
type Isolation struct {
	// PidNamespace: each launcher is the init of a pid namespace of its own.
	PidNamespace bool
	// PrivateRoot: each command's root holds only its policy's paths (unless
	// building it fails on this host, when the mounts are made read-only).
	PrivateRoot bool
	// MemoryCgroups: each command has a memory cgroup with a hard limit, which
	// is also how a dead launcher's processes are found without a namespace.
	MemoryCgroups bool
	// OOMPinned: the command's OOM score is pinned at the maximum and the
	// launcher's at the minimum (CAP_SYS_RESOURCE); else the command only
	// starts at the maximum and may lower its score to the launcher's.
	OOMPinned bool
	// PrivateNetwork: each command may get a network namespace of its own
	// (commands without network always do, and allowHosts needs one).
	PrivateNetwork bool
	// NamespacesOff: NoNamespacesEnv turned the namespaces off.
	NamespacesOff bool
	// IPCNamespace: each launcher has an IPC namespace of its own, so the
	// System V segments and POSIX message queues of a call die with it.
	IPCNamespace bool
	// UserNamespace: launchers are made in user namespaces of their own (an
	// ordinary user's server), which is how they hold the namespaces above.
	UserNamespace bool
	// Mode names the whole: ModeRoot, ModeUserNS or ModeLandlock.
	Mode string
	// NprocPerUserNS: the kernel counts RLIMIT_NPROC per user namespace
	// (Linux >= 5.14), so a user-namespace launcher makes it the call's
	// process limit.
	NprocPerUserNS bool
	// ProcessCgroups: each command has a pids cgroup of its own whose limit is
	// its maxProcesses (cgroup v1, where this process may make cgroups).
	ProcessCgroups bool
	// CPUCgroups: each command has a cpu cgroup of its own, of the default
	// weight, so calls share the CPU equally.
	CPUCgroups bool
}

// TmpDirName is the directory of the scratch dir (Sandbox.Tmp) that a private
// root shows at /tmp.
const TmpDirName = wire.TmpDirName

// Mode names, as results and doctor give them (see Isolation.Mode): a root
// server's namespaces, an ordinary user's made in user namespaces, or none.
const (
	ModeRoot     = "namespaces"
	ModeUserNS   = "user-namespaces"
	ModeLandlock = "landlock-only"
)

package jail

import (
	"errors"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
)

// Sentinel errors that callers branch on.
var (
	// ErrUnsupported: this host cannot enforce what the policy needs (no
	// Landlock, an old Landlock ABI, no seccomp, an unsupported platform).
	ErrUnsupported = confine.ErrUnsupported
	// ErrPolicy: the policy cannot be expressed (for example a DenyWrite
	// path beneath a ReadWrite path, which Landlock cannot subtract).
	ErrPolicy = confine.ErrPolicy
	// ErrSandbox: applying the restrictions failed in the launcher.
	ErrSandbox = confine.ErrSandbox
	// ErrLauncher: the launcher failed or died without reporting the
	// command's exit status.
	ErrLauncher = errors.New("jail: launcher failed")
	// ErrCommandAccess: the uid commands run as (CommandCredential) cannot
	// reach, read or write a path a call mounts.
	ErrCommandAccess = errors.New("the commands' uid cannot use this path")
)

// Status is what this host can enforce, for `autobox doctor` and for the
// fail-closed check before every sandboxed start (see confine.Status).
type Status = confine.Status

// MinLandlockABI is the oldest Landlock ABI the jail runs with (see
// confine.MinLandlockABI).
const MinLandlockABI = confine.MinLandlockABI

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

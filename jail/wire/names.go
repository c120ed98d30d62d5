package wire

import "syscall"

// NoNamespacesEnv, set to 1 in the environment of the process that starts
// launchers (and so in theirs), makes the jail use no namespaces even where it
// could: no pid namespace, no private root, no read-only remount. The sandbox
// is then what an unprivileged user gets (Landlock, seccomp, the process-tree
// sweep); the tests use it to check those paths on a root machine.
const NoNamespacesEnv = "AUTOBOX_NO_NAMESPACES"

// ProxyPort is where, inside its private network, a command reaches the proxy
// for its host allowlist (policy.Sandbox.PrivateNetwork): 127.0.0.1 and [::1].
// The launcher listens on it; the server reserves it.
const ProxyPort = 3128

// CgroupPrefix starts the name of every cgroup a server makes, followed by its
// pid, its pid namespace's inode and a uuid (autobox-p<pid>-n<inode>-<uuid>):
// a server of the same pid namespace sweeps a gone owner's by it, and a
// launcher knows its tree's own cgroups by it (the view it shows a command of
// them).
const CgroupPrefix = "autobox-p"

// TmpDirName is the directory of the scratch dir (Sandbox.Tmp) that a private
// root shows at /tmp.
const TmpDirName = ".tmp"

// What the server tells a launcher in its environment at the fork.
const (
	// UserNSEnv=1: the launcher runs in a user namespace of its own.
	UserNSEnv = "AUTOBOX_USERNS"
	// CgroupsEnv is how many cgroup task files the launcher was given, from
	// FirstCgroupFD up, and PidsMaxEnv=1 that the last of them is pids.max.
	CgroupsEnv = "AUTOBOX_LAUNCHER_CGROUPS"
	PidsMaxEnv = "AUTOBOX_LAUNCHER_PIDS_MAX"
	// MemStatEnv is the descriptor of the launcher's memory cgroup's
	// memory.stat, which the launcher reads right before it forks the command
	// (Message.ShmemBase), if it was given one.
	MemStatEnv = "AUTOBOX_LAUNCHER_MEMSTAT"
	// HostTasksEnv is the user's task count the last launcher found, for the
	// next to start from.
	HostTasksEnv = "AUTOBOX_HOST_TASKS"
	// CommandUIDEnv is the uid and gid the launcher's command runs as, where
	// it is not the launcher's own (a root server without namespaces).
	CommandUIDEnv = "AUTOBOX_COMMAND_UID"
)

// FirstCgroupFD is the first of the cgroup task files a launcher gets.
const FirstCgroupFD = StatusFD + 1

// PortsPreamble starts a launcher's connection to the server's ports socket
// (a session's ports), followed by the call's token and a newline.
const PortsPreamble = "AUTOBOX-PORTS "

// HostNprocMargin is how far past maxProcesses the kernel lets a tree grow
// before it refuses its forks. It absorbs what the user's other tasks grow by
// while the call runs: the server's own, first (a call has its pools start a
// launcher and a JS worker, ten to thirty threads), which a margin of a
// quarter of maxProcesses (5 of 20) did not on a busy machine. The launcher
// adds it to its limit; the server takes it off the limit for HostTasksEnv.
const HostNprocMargin = 64

// Signals are the signals a launcher sends its command's process group when
// the server asks (MsgSignal, Tree.Signal): what a person at a terminal sends.
var Signals = map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "SIGTERM": syscall.SIGTERM, "SIGKILL": syscall.SIGKILL}

// TerminalPath is where a session's terminal is bound in a private root.
const TerminalPath = "/dev/console"

// RedirectPort is where, inside its private network, a command's TCP
// connections to addresses outside it arrive (the transparent path); the
// launcher listens on it, the server reserves it.
const RedirectPort = 3129

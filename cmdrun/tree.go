package cmdrun

import (
	"os"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// Tree is a running command and everything it started.
type Tree interface {
	Pid() int
	// Wait returns once the command and every process it started are gone (the
	// enforcer kills what is left after the command exits), so nothing outlives a call.
	Wait() (policy.Exit, error)
	// Kill ends the whole tree; safe to call more than once and after exit.
	Kill()
}

// SignalTree is a tree whose command can be signalled ("SIGINT", "SIGTERM",
// "SIGKILL" to its process group).
type SignalTree interface {
	Tree
	Signal(sig string) error
}

// Runner starts commands under the platform's OS sandbox (jail on Linux, seatbelt on
// macOS) or refuses where there is none. memory is the tree's memory limit in bytes:
// the watchdog (Enforce) holds the tree to it everywhere, and the jail also sets it as
// the kernel's hard limit where the host lets it make cgroups.
type Runner interface {
	Start(c *policy.Command, memory int64, stdout, stderr *os.File) (Tree, error)
	// Close ends the runner's idle launchers; a command that comes after is refused.
	Close()
}

// InteractiveRunner is a runner that can start commands that read input, and
// perhaps run on a terminal (sessions: Linux's launcher).
type InteractiveRunner interface {
	StartInteractive(c *policy.Command, memory int64, stdout, stderr *os.File, in *jail.Interactive) (SignalTree, error)
}

// What a tree may also tell, where its enforcer knows it. Each is asserted of
// the trees that have it (runner_linux.go, runner_darwin.go), so that renaming a
// method breaks the build instead of turning a report off.
type (
	isolationTree    interface{ Isolation() string }
	oomTree          interface{ OOMKilled() bool }
	usageTree        interface{ Usage() policy.Usage }
	memoryCgroupTree interface{ MemoryCgroup() bool }
	privateRootTree  interface{ PrivateRoot() bool }
	forkCounter      interface{ ForksRefused() int }
)

// Isolation names the sandbox t ran in, "" where its enforcer does not say.
func Isolation(t Tree) string {
	if i, ok := t.(isolationTree); ok {
		return i.Isolation()
	}
	return ""
}

// PrivateRoot reports whether t's command had a root of its own, where each
// mount was bound at its sandbox path.
func PrivateRoot(t Tree) bool {
	r, ok := t.(privateRootTree)
	return ok && r.PrivateRoot()
}

// ForksRefused is how many forks t's process limit refused, -1 where the
// kernel refuses them without counting (see watchdog.Kernel); ok is false
// where t's enforcer cannot tell at all.
func ForksRefused(t Tree) (n int, ok bool) {
	fc, ok := t.(forkCounter)
	if !ok {
		return 0, false
	}
	return fc.ForksRefused(), true
}

// oomKilled reports whether the kernel's OOM killer ended a process of t for going
// over the kernel's limit (only trees with one can tell).
func oomKilled(t Tree) bool {
	k, ok := t.(oomTree)
	return ok && k.OOMKilled()
}

// treeUsage is what the tree's enforcer accounted once it was gone (zero where it
// cannot tell); a command that ran was one process at least, however short.
func treeUsage(t Tree, res policy.Exit) policy.Usage {
	u := res.Usage
	if k, ok := t.(usageTree); ok {
		u = k.Usage()
	}
	if res.Started {
		u.Processes = max(u.Processes, 1)
	}
	return u
}

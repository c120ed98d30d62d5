package supervisor

import (
	"os"

	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/policy"
)

// tree is a running command and everything it started.
type tree interface {
	Pid() int
	// Wait returns once the command and every process it started are gone (the
	// enforcer kills what is left after the command exits), so nothing outlives a call.
	Wait() (policy.Exit, error)
	// Kill ends the whole tree; safe to call more than once and after exit.
	Kill()
}

// runner starts commands under the platform's OS sandbox (jail on Linux, seatbelt on
// macOS) or refuses where there is none. memory is the tree's memory limit in bytes:
// the watchdog (treeLimits.watch) enforces it everywhere, and the jail also sets it as
// the kernel's hard limit where the host lets it make cgroups.
type runner interface {
	start(c *policy.Command, memory int64, stdout, stderr *os.File) (tree, error)
	close()
}

// What a tree may also tell, where its enforcer knows it. Each is asserted of
// the trees that have it (runner_linux.go, runner_darwin.go), so that renaming a
// method breaks the build instead of turning a report off.
type (
	isolationTree    interface{ Isolation() string }
	oomTree          interface{ OOMKilled() bool }
	usageTree        interface{ Usage() policy.Usage }
	memoryCgroupTree interface{ MemoryCgroup() bool }
)

// isolationOf names the sandbox t ran in, "" where its enforcer does not say.
func isolationOf(t tree) string {
	if i, ok := t.(isolationTree); ok {
		return i.Isolation()
	}
	return ""
}

// oomKilled reports whether the kernel's OOM killer ended a process of t for going
// over the kernel's limit (only trees with one can tell).
func oomKilled(t tree) bool {
	k, ok := t.(oomTree)
	return ok && k.OOMKilled()
}

// watchRSS watches the resident memory of root and all its descendants and calls
// breach once when it passes limit (see package watchdog). The returned func stops
// the watchdog; once it has returned, breach is not running and will not be called.
func watchRSS(root int, limit int64, breach func(rss int64)) (stop func()) {
	w := watchdog.Start(root, watchdog.Limits{Memory: limit, Written: -1}, watchdog.Options{MemoryOnly: true}, func(b watchdog.Breach) { breach(b.Value) })
	return func() { w.Stop() }
}

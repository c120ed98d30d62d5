package cmdrun

import (
	"os"
	"sync"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// What a jail tree tells beyond the Tree interface (see isolationTree).
var (
	_ SignalTree       = (*jail.Tree)(nil)
	_ isolationTree    = (*jail.Tree)(nil)
	_ oomTree          = (*jail.Tree)(nil)
	_ usageTree        = (*jail.Tree)(nil)
	_ memoryCgroupTree = (*jail.Tree)(nil)
	_ privateRootTree  = (*jail.Tree)(nil)
	_ forkCounter      = (*jail.Tree)(nil)
	_ watchdog.Kernel  = (*jail.Tree)(nil)

	_ InteractiveRunner = (*jailRunner)(nil)
)

// jailRunner runs commands through the `autobox worker exec` launcher under
// Landlock + seccomp, and refuses when the host cannot enforce the call's policy.
// Launchers are kept warm in a pool, made on the first command so a server
// that never runs commands never pays for idle launchers.
type jailRunner struct {
	exe       string
	unsafe    bool
	launchers int        // kept ready (see NewRunner)
	mu        sync.Mutex // guards pool and closed: a call may arrive as the server closes
	pool      *jail.Pool // made on the first command, or by NewRunner for one
	closed    bool
}

// NewRunner returns the runner of exe (the autobox binary), whose launchers
// run its commands; unsafe: the server runs commands without the sandbox where
// the host cannot enforce it (--unsafe-no-sandbox). launchers is how many
// launchers wait for commands once the first has come: 0 keeps none, each
// command starts its own; negative is for a process that runs one command:
// its launcher is started now, while the process makes ready the rest (see
// jail.NewPoolOfOne), and none is kept after it.
func NewRunner(exe string, unsafe bool, launchers int) Runner {
	r := &jailRunner{exe: exe, unsafe: unsafe, launchers: launchers}
	if launchers < 0 {
		r.pool = jail.NewPoolOfOne(exe)
	}
	return r
}

// Close closes the launcher pool; a command that comes after is refused, and
// makes no pool that nobody would close.
func (r *jailRunner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.pool != nil {
		r.pool.Close()
	}
}

func (r *jailRunner) Start(c *policy.Command, memory int64, stdout, stderr *os.File) (Tree, error) {
	pool, err := r.ready(c)
	if err != nil {
		return nil, err
	}
	t, err := pool.Start(c, stdout, stderr, memory)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (r *jailRunner) StartInteractive(c *policy.Command, memory int64, stdout, stderr *os.File, in *jail.Interactive) (SignalTree, error) {
	pool, err := r.ready(c)
	if err != nil {
		return nil, err
	}
	t, err := pool.StartInteractive(c, stdout, stderr, memory, in)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// ready refuses c where the host cannot enforce its sandbox or the server is
// closing, and gives the launcher pool, made on the first command.
func (r *jailRunner) ready(c *policy.Command) (*jail.Pool, error) {
	if !c.Unsafe {
		if err := jail.Probe().Check(&c.Sandbox); err != nil {
			return nil, &UnavailableError{Why: err}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if r.pool == nil {
		// Idle launchers prepare the sandbox every command's extends
		// (syspaths.Base). Not for a server run without the sandbox:
		// preparing drops capabilities that its commands would then not get.
		var base *policy.Sandbox
		if !r.unsafe {
			base = syspaths.Base()
			// A command's own cgroups too (supervisor's commandPolicy): its
			// view is mounted while the launcher waits.
			syspaths.OwnCgroups(base)
		}
		r.pool = jail.NewPool(r.exe, r.launchers, base)
	}
	return r.pool, nil
}

// rootIsLauncher: a tree's root process is its launcher, whose own memory, CPU and
// threads are not the command's (see watchdog.Options).
const rootIsLauncher = true

// HardOpenFiles is the most open files a command may be allowed here, and
// whether this host tells: launchers inherit this process's hard limit and
// cannot raise it.
func HardOpenFiles() (uint64, bool) {
	n, err := jail.HardOpenFiles()
	return n, err == nil
}

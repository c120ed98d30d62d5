package jail

import (
	"strconv"
	"sync/atomic"

	"github.com/autobox-dev/autobox/jail/wire"
)

// The server's side of RLIMIT_NPROC on the host's count (the launcher's is
// jail/launcher/nprochost_linux.go): what Tree tells the watchdog, and the hint it passes
// the next launchers.

// hostTasksHint is the count the last call's launcher reported (see
// Tree.readStatus), for the next launchers' wire.HostTasksEnv; 0 before any.
var hostTasksHint atomic.Int64

// hostCeiling is ProcessCeiling where the launcher set RLIMIT_NPROC on the
// host's count: the kernel lets the tree have maxProcesses and the margin
// only while the user's other tasks stay as many as they were, so a tree that
// stays at maxProcesses is taken as held there (see watchdog.CeilingHold).
func (t *Tree) hostCeiling() int { return t.processes }

// noteHostTasks keeps the count a launcher that set RLIMIT_NPROC on the host's
// count found, nproc its limit, for the next launchers (wire.HostTasksEnv).
func (t *Tree) noteHostTasks(nproc int) {
	if !t.userns && nproc > 0 {
		hostTasksHint.Store(int64(nproc - t.processes - wire.HostNprocMargin))
	}
}

// hostTasksArg is the wire.HostTasksEnv setting for a launcher spawned now, or "".
func hostTasksArg() string {
	if h := hostTasksHint.Load(); h > 0 {
		return wire.HostTasksEnv + "=" + strconv.FormatInt(h, 10)
	}
	return ""
}

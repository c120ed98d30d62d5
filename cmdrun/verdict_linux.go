package cmdrun

import (
	"errors"

	"golang.org/x/sys/unix"
)

// launcherExited reports whether the process that runs t (its launcher, a child of
// this server) has already exited: a zombie not yet reaped, or reaped already. The
// launcher exits only once the command's whole tree has ended, so a tree whose
// launcher has exited ended on its own, whatever the server's clock says (see
// timeUp). WNOWAIT leaves the reaping to the tree's own waiter.
func launcherExited(t Tree) bool {
	pid := t.Pid()
	if pid <= 0 {
		return false
	}
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true // reaped: its waiter has the report
	}
	return err == nil && info.Signo != 0
}

package jail

import (
	"errors"
	"syscall"
)

// A fork that makes a launcher's namespaces can fail for the host's reasons or
// for the moment's. A host that refuses pid namespaces to root (a container's
// seccomp profile: EPERM; a kernel without them: EINVAL), or user namespaces to
// an ordinary user, refuses them for good, and the server's mode says so. But
// EAGAIN and ENOMEM are the moment's: a fork bomb next door fills the user's
// process count or a pids cgroup, memory runs short. Such an error fails the
// call that met it (or, at the probe of user namespaces, is not kept): it never
// takes the server to a weaker mode for the rest of its life, and no call runs
// with less than the mode the server reports.

// transientForkError reports whether err, from a fork, is the moment's.
func transientForkError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOMEM)
}

// pidNamespaceRefused reports whether err, from forking a root launcher into
// pid and IPC namespaces of its own, says the host refuses those namespaces.
func pidNamespaceRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL)
}

// errForkTransient marks a call refused because making its launcher's
// namespaces failed for the moment.
var errForkTransient = errors.New("the host is short of processes or memory right now (a full process count or pids cgroup, or low memory): this call did not run, and nothing weaker ran in its place; try again")

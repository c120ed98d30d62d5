//go:build cgo && linux

package worker

import (
	"errors"

	"github.com/autobox-dev/autobox/jail"
)

// enterJail finishes the jail. The supervisor forks workers from a thread that is
// already restricted (no_new_privs, Landlock, seccomp), so every thread of this process
// is born confined; what is left is to forbid exec on all of them before V8 starts.
func enterJail(stage string) error {
	switch stage {
	case JailedFlag:
		return jail.ForbidExecAllThreads()
	case UnjailedFlag:
		return nil
	}
	return errors.New("autobox worker js is started by the autobox server (with --jailed or --unjailed)")
}

//go:build cgo && linux

package worker

import (
	"errors"

	"github.com/autobox-dev/autobox/jail/restrict"
)

// enterJail finishes the jail. The supervisor starts workers confined
// (Landlock, no_new_privs, the sandbox's seccomp filter, a user and pid namespace
// of their own where the host allows: see jail.WorkerSpawner and restrict.EnterWorker), so every thread of
// this process is born confined; what is left, before anything is read from the
// supervisor, is the worker's seccomp allow-list on every thread (V8's started at
// package init).
func enterJail(stage string) error {
	switch stage {
	case JailedFlag:
		return restrict.EnterWorker()
	case UnjailedFlag:
		return nil
	}
	return errors.New("autobox worker js is started by the autobox server (with --jailed or --unjailed)")
}

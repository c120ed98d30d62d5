//go:build cgo && !linux

package worker

import "errors"

// enterJail: on macOS the supervisor starts the worker under sandbox-exec with a
// deny-by-default profile, so there is nothing left to do here.
func enterJail(stage string) error {
	if stage != JailedFlag && stage != UnjailedFlag {
		return errors.New("autobox worker js is started by the autobox server (with --jailed or --unjailed)")
	}
	return nil
}

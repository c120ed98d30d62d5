package seatbelt

import (
	"errors"

	"github.com/autobox-dev/autobox/policy"
)

// ErrUnavailable is returned by Available and Start when seatbelt cannot be
// used on this host: not macOS, no /usr/bin/sandbox-exec, or sandbox-exec
// cannot apply autobox's profiles here (for example inside another sandbox).
var ErrUnavailable = errors.New("seatbelt unavailable")

// ErrInvalidSpec is returned by Start for a Spec it will not run.
var ErrInvalidSpec = errors.New("invalid exec spec")

// Spec is one sandboxed command. Sandbox.AllowExec must be true: sandbox-exec
// starts the command by an exec that the profile already governs.
type Spec = policy.Command

// Result is how a command ended.
type Result = policy.Exit

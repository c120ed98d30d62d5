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

// Spec is one sandboxed command.
type Spec struct {
	// Argv is the command. A first word without "/" is looked up in the PATH
	// of Env (absolute entries only; /usr/bin:/bin when Env has none).
	Argv []string
	// Dir is the working directory; empty means the caller's.
	Dir string
	// Env is the command's entire environment; nil means empty, never the
	// caller's.
	Env []string
	// Sandbox is what seatbelt enforces. AllowExec must be true: sandbox-exec
	// starts the command by an exec that the profile already governs.
	Sandbox policy.Sandbox
	// Unsafe runs the command without seatbelt (only when the server was
	// started with the explicit unsafe flag). Everything else still applies.
	Unsafe bool
}

// Result is how a command ended.
type Result struct {
	// Started is false when the command could not be started at all;
	// SpawnError then says why.
	Started    bool
	SpawnError string
	// ExitCode is the exit status, or -1 when a signal ended the command or
	// it never started.
	ExitCode int
	// Signal is the name of that signal ("SIGKILL"), else empty.
	Signal string
}

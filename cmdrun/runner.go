package cmdrun

import (
	"errors"
	"runtime"
)

// A runner's refusals are typed, so that each caller says them in its own
// words (the server: exec_command's; see supervisor's runnerRefusal), and
// branches on them with errors.Is and errors.As, never on their text.

// ErrSandboxUnavailable: the host cannot enforce what a command needs. A
// runner's *UnavailableError is one (errors.Is).
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

// ErrClosed: the runner was closed, and starts nothing more.
var ErrClosed = errors.New("runner closed")

// UnavailableError is a runner's refusal of a command whose sandbox this host
// cannot enforce (errors.Is(err, ErrSandboxUnavailable) holds).
type UnavailableError struct {
	// Why is what the platform's sandbox found missing; nil where this
	// platform has no OS sandbox at all (NoSandbox).
	Why error
}

// NoSandbox reports whether the platform has no OS sandbox at all.
func (e *UnavailableError) NoSandbox() bool { return e.Why == nil }

func (e *UnavailableError) Error() string {
	if e.NoSandbox() {
		return "sandbox unavailable: no OS sandbox on " + runtime.GOOS + "/" + runtime.GOARCH
	}
	return "sandbox unavailable: " + e.Why.Error()
}

func (e *UnavailableError) Is(target error) bool { return target == ErrSandboxUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Why }

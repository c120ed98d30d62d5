package cmdrun

import "errors"

// ErrSandboxUnavailable: the host cannot enforce what a command needs.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

package cmdrun

import (
	"errors"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/policy"
)

// ErrSandboxUnavailable: the host cannot enforce what a command needs.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

// BasePolicy is the part of every command's policy that is the same in every call:
// system directories and devices, no network. A runner's idle launchers prepare for
// it; a command's own policy extends it.
func BasePolicy() *policy.Sandbox {
	sys := syspaths.SystemPaths()
	// Every path is canonical: system paths resolved there, mounts and
	// workspaces checked by validation, scratch dirs resolved when made.
	return &policy.Sandbox{AllowExec: true, ReadOnly: sys.ReadOnly, Hidden: sys.Hidden(), Devices: sys.Devices, Links: sys.ReadOnlyLinks, NoFollow: true}
}

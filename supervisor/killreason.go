package supervisor

import "github.com/autobox-dev/autobox/cmdrun"

// Why a command's tree was killed (ExecOutput.KilledBy): package cmdrun's
// kinds, under the names the CLI and clients of this package know.

// KillKind is why a command's tree was killed (ExecOutput.KilledBy).
type KillKind = cmdrun.KillKind

// The kinds of kill (see cmdrun.KillKind).
const (
	KilledTimeout   = cmdrun.KilledTimeout   // timeoutMs passed
	KilledCancelled = cmdrun.KilledCancelled // the client cancelled the call, or closed
	KilledMemory    = cmdrun.KilledMemory    // memoryMb
	KilledProcesses = cmdrun.KilledProcesses // maxProcesses
	KilledDisk      = cmdrun.KilledDisk      // maxWriteMb
	KilledCPU       = cmdrun.KilledCPU       // cpuMs
	KilledSession   = cmdrun.KilledSession   // a session closed, idle, or the server shutting down
)

// ErrSandboxUnavailable: the host cannot enforce what a call needs.
var ErrSandboxUnavailable = cmdrun.ErrSandboxUnavailable

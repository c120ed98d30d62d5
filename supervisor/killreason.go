package supervisor

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/internal/flaghint"
)

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

// errShuttingDown: a call that arrives as the server closes.
var errShuttingDown = errors.New("the server is shutting down")

// runnerRefusal says a refusal of the command runner (cmdrun's typed ones) in
// exec_command's words; other errors pass as they are. ErrSandboxUnavailable
// stays in the chain.
func runnerRefusal(err error) error {
	var un *cmdrun.UnavailableError
	switch {
	case errors.As(err, &un) && un.NoSandbox():
		return fmt.Errorf("%w: exec_command has no OS sandbox on %s/%s", ErrSandboxUnavailable, runtime.GOOS, runtime.GOARCH)
	case errors.As(err, &un):
		return fmt.Errorf("%w: exec_command refused: %v (%s runs commands without an OS sandbox)", ErrSandboxUnavailable, un.Why, flaghint.Serve(flaghint.UnsafeNoSandbox))
	case errors.Is(err, cmdrun.ErrClosed):
		return errShuttingDown
	}
	return err
}

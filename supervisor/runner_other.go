//go:build !linux && !darwin

package supervisor

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/autobox-dev/autobox/policy"
)

// ErrSandboxUnavailable: the host cannot enforce what a call needs.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

// refusingRunner: no OS sandbox exists on this platform, so exec_command is refused
// unless the server was started with the explicit unsafe flag.
type refusingRunner struct{}

func newRunner(exe string, unsafe bool) runner { return refusingRunner{} }

func (refusingRunner) close() {}

func (refusingRunner) start(c *policy.Command, memory int64, stdout, stderr *os.File) (tree, error) {
	return nil, fmt.Errorf("%w: exec_command has no OS sandbox on %s/%s", ErrSandboxUnavailable, runtime.GOOS, runtime.GOARCH)
}

const rootIsLauncher = false

func hardOpenFiles() (uint64, bool) { return 0, false }

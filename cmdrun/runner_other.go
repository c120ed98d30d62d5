//go:build !linux && !darwin

package cmdrun

import (
	"os"

	"github.com/autobox-dev/autobox/policy"
)

// refusingRunner: no OS sandbox exists on this platform, so commands are refused.
type refusingRunner struct{}

// NewRunner returns a runner that refuses every command: there is no OS
// sandbox here.
func NewRunner(exe string, unsafe bool, launchers int) Runner { return refusingRunner{} }

func (refusingRunner) Close() {}

func (refusingRunner) Start(c *policy.Command, memory int64, stdout, stderr *os.File) (Tree, error) {
	return nil, &UnavailableError{}
}

const rootIsLauncher = false

// HardOpenFiles: this host does not tell.
func HardOpenFiles() (uint64, bool) { return 0, false }

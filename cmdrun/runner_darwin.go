package cmdrun

import (
	"os"
	"syscall"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/seatbelt"
)

// What a seatbelt tree tells beyond the Tree interface (see isolationTree).
var _ isolationTree = (*seatbelt.Tree)(nil)

// seatbeltRunner runs commands under /usr/bin/sandbox-exec.
type seatbeltRunner struct{ unsafe bool }

// NewRunner returns the runner of exe (the autobox binary); unsafe: the server
// runs commands without the sandbox where the host cannot enforce it. Commands
// start no launcher here, so none is kept ready (launchers).
func NewRunner(exe string, unsafe bool, launchers int) Runner { return &seatbeltRunner{unsafe: unsafe} }

func (r *seatbeltRunner) Close() {}

func (r *seatbeltRunner) Start(c *policy.Command, memory int64, stdout, stderr *os.File) (Tree, error) {
	if err := seatbelt.Available(); err != nil && !c.Unsafe {
		return nil, &UnavailableError{Why: err}
	}
	t, err := seatbelt.Start(c, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// rootIsLauncher: sandbox-exec execs the command in place, so a tree's root
// process is the command.
const rootIsLauncher = false

// HardOpenFiles is the most open files a command may be allowed here: this
// process's hard limit, which its children cannot raise.
func HardOpenFiles() (uint64, bool) {
	var l syscall.Rlimit
	err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Max, err == nil
}

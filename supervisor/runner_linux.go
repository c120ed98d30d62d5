package supervisor

import (
	"errors"
	"fmt"
	"os"

	"github.com/autobox-dev/autobox/jail"
)

// jailRunner runs commands through the `autobox worker exec` launcher under
// Landlock + seccomp, and refuses when the host cannot enforce the call's policy.
type jailRunner struct {
	exe    string
	unsafe bool
}

func newRunner(exe string, unsafe bool) runner { return &jailRunner{exe: exe, unsafe: unsafe} }

// ErrSandboxUnavailable: the host cannot enforce what a call needs.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

func (r *jailRunner) start(c *command, stdout, stderr *os.File) (tree, error) {
	if !c.Unsafe {
		if err := jail.Probe().Check(&c.Sandbox); err != nil {
			return nil, fmt.Errorf("%w: exec_command refused: %v (start the server with --unsafe-no-sandbox to run commands without an OS sandbox)", ErrSandboxUnavailable, err)
		}
	}
	t, err := jail.Start(r.exe, &jail.Spec{Argv: c.Argv, Dir: c.Dir, Env: c.Env, Sandbox: c.Sandbox, Unsafe: c.Unsafe}, stdout, stderr)
	if err != nil {
		return nil, err
	}
	return jailTree{t}, nil
}

type jailTree struct{ t *jail.Tree }

func (j jailTree) Pid() int { return j.t.Pid() }
func (j jailTree) Kill()    { j.t.Kill() }
func (j jailTree) Wait() (exitResult, error) {
	r, err := j.t.Wait()
	return exitResult{Started: r.Started, SpawnError: r.SpawnError, ExitCode: r.ExitCode, Signal: r.Signal}, err
}

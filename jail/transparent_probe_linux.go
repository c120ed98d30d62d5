package jail

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/autobox-dev/autobox/internal/launcherbin"
	"github.com/autobox-dev/autobox/jail/wire"
)

// TransparentNetwork reports whether a command with allowHosts also gets the
// transparent path (every program's connections and lookups, not only those
// of tools that read the proxy variables), and if not, why not. Probed once,
// in a network namespace made as a launcher's is.
func TransparentNetwork() (ok bool, why string) {
	r := transparentProbe()
	if r == nil {
		return true, ""
	}
	return false, r.Error()
}

var transparentProbe = sync.OnceValue(func() error {
	if !Isolations().PrivateNetwork {
		return errors.New("commands get no network namespace of their own here")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program: %w", err)
	}
	sys := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	env := []string{} // not nil: nothing of this environment
	if launcherMode() == nsUser {
		userNSAttr(sys)
		env = append(env, wire.UserNSEnv+"=1")
	}
	cmd := exec.Command(launcherbin.Path(exe), "worker", wire.RoleTransparentProbe)
	cmd.Args[0] = exe
	cmd.Env = env
	cmd.SysProcAttr = sys
	return runProbe(cmd)
})

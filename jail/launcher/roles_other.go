//go:build !linux

package launcher

import (
	"fmt"
	"os"
	"runtime"

	"github.com/autobox-dev/autobox/jail/restrict"
	"github.com/autobox-dev/autobox/jail/wire"
)

// childRoles holds the launcher's role, which reports the missing platform
// and exits with status 2: there is no launcher on this platform.
func childRoles() map[string]Role {
	return map[string]Role{
		wire.RoleExec: func([]string) int {
			fmt.Fprintf(os.Stderr, "%v: Landlock and seccomp are Linux-only, this is %s/%s\n", restrict.ErrUnsupported, runtime.GOOS, runtime.GOARCH)
			return 2
		},
	}
}

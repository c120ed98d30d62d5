package confine

import (
	"errors"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/restrict"
)

// Probe reports what this host can enforce. The result is computed once.
func Probe() Status { return probeOnce() }

var probeOnce = sync.OnceValue(probe)

func probe() Status {
	s := Status{Platform: runtime.GOOS + "/" + runtime.GOARCH}
	abi, err := landlockABI()
	switch {
	case err == nil:
		s.LandlockABI = abi
	case errors.Is(err, unix.EOPNOTSUPP):
		s.Landlock = "built into the kernel but not enabled: add landlock to the lsm= boot parameter"
	case errors.Is(err, unix.ENOSYS):
		s.Landlock = "the kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, Linux >= 5.13)"
	default:
		s.Landlock = "landlock_create_ruleset: " + err.Error()
	}
	s.Seccomp, s.SeccompArch, s.NoNewPrivs = restrict.SeccompSupport()
	return s
}

// landlockABI asks the kernel for its Landlock ABI version.
func landlockABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

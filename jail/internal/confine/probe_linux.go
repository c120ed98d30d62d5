package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

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

// NprocPerUserNS reports whether the kernel counts RLIMIT_NPROC per user
// namespace (Linux 5.14, the ucounts rework). Before, it counts every process
// of the uid on the host, and a limit of the call's size would refuse the
// user's forks everywhere: there the watchdog holds maxProcesses alone.
var NprocPerUserNS = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 5 || major == 5 && minor >= 14
})

// UnixGuardAvailable reports whether the launcher's unix socket guard can work here: seccomp user
// notification (Linux 5.0), and pidfd_open, pidfd_getfd (5.6) and
// process_vm_readv allowed (Docker's default seccomp profile refuses the last
// two without CAP_SYS_PTRACE), each tried on this process. Without it
// socket(AF_UNIX) is refused unless the network is allowed, as before.
var UnixGuardAvailable = sync.OnceValue(func() bool {
	action := uint32(seccompRetUserNotif)
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, seccompGetActionAvail, 0, uintptr(unsafe.Pointer(&action))); e != 0 {
		return false
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(pidfd)
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(null)
	fd, err := unix.PidfdGetfd(pidfd, null, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	var word, probe uint64 = 0, 42
	n, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: (*byte)(unsafe.Pointer(&word)), Len: 8}},
		[]unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&probe)), Len: 8}}, 0)
	return err == nil && n == 8 && word == 42
})

const (
	seccompGetActionAvail = 2 // SECCOMP_GET_ACTION_AVAIL
	seccompRetUserNotif   = unix.SECCOMP_RET_USER_NOTIF
)

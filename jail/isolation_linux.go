package jail

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
)

// namespacesOff: NoNamespacesEnv is set, and launchers get none (launcherEnv
// tells them so).
var namespacesOff = os.Getenv(NoNamespacesEnv) == "1"

// Isolations reports what launchers started by this process get.
func Isolations() Isolation {
	return Isolation{
		PidNamespace:   usePidNamespace(),
		PrivateRoot:    usePidNamespace(),
		PrivateNetwork: usePidNamespace() && NoPrivateNetworkWhy() == "",
		IPCNamespace:   usePidNamespace(),
		UserNamespace:  launcherMode() == nsUser,
		Mode:           ModeName(),
		NprocPerUserNS: confine.NprocPerUserNS(),
		MemoryCgroups:  probeCgroups() != nil,
		OOMPinned:      confine.HasCap(unix.CAP_SYS_RESOURCE),
		NamespacesOff:  namespacesOff,
		ProcessCgroups: probeCmdCgroups() != nil && probeCmdCgroups().pids != "",
		CPUCgroups:     probeCmdCgroups() != nil && probeCmdCgroups().cpu != "",
	}
}

// UnixGuard reports whether commands' unix sockets are guarded here (they
// may make their own), as doctor says.
func UnixGuard() bool { return confine.UnixGuardAvailable() }

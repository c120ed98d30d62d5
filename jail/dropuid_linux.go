package jail

import (
	"os"

	"github.com/autobox-dev/autobox/jail/internal/confine"
)

// A root server without namespaces (NoNamespacesEnv, or a host that refuses
// them even to root) must not run commands as uid 0. Without capabilities
// uid 0 still owns every root-owned file: it could chmod one (a setuid-root
// copy of a shell in a read-write mount, for every local user to run) or
// rewrite a root-owned file Landlock lets it write. There the command thread
// takes an unprivileged uid and gid (nobody's, 65534) right before it drops
// its capabilities: after its Landlock rules are opened (as root: a mount
// the call declared may lie below a directory only root may search) and
// before the restriction. The scratch dir is handed to that uid by the
// supervisor (CommandCredential); a read-write mount must be writable by it.
// In every namespaced mode the command keeps the server's uid: as root it
// gets a private root whose host files are bound read-only, and as an
// ordinary user it is that user.

// dropRoot is true but in this package's tests of the no-namespace mode as
// root (their victim is the test binary, which only root may run).
var dropRoot = true

// CommandCredential reports the uid and gid this process's commands run as
// when it is not their own (drop): a root server without namespaces.
func CommandCredential() (uid, gid int, drop bool) {
	if dropRoot && os.Geteuid() == 0 && launcherMode() == nsNone {
		return confine.UnprivilegedID, confine.UnprivilegedID, true
	}
	return os.Getuid(), os.Getgid(), false
}

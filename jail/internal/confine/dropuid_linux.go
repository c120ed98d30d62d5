package confine

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
)

// A root server without namespaces runs its commands as an unprivileged uid
// (see jail.CommandCredential, which says why): the launcher's command thread
// takes it right before it drops its capabilities, after its Landlock rules are
// opened and before the restriction.

// UnprivilegedID is the uid and gid commands of a root server without
// namespaces run as.
const UnprivilegedID = 65534

// CommandUID is the uid the launcher's command runs as (wire.CommandUIDEnv),
// -1 for its own.
func CommandUID() int { return commandUID }

// commandUID is the uid the launcher's command runs as, -1 for its own.
var commandUID = func() int {
	n, err := strconv.Atoi(os.Getenv(wire.CommandUIDEnv))
	if err != nil || n <= 0 {
		return -1
	}
	return n
}()

// dropUID gives the calling thread (only: the raw system calls, not Go's,
// which change every thread) commandUID as its real, effective and saved uid
// and gid, and no supplementary groups.
func dropUID() error {
	if commandUID < 0 || unix.Geteuid() != 0 {
		return nil
	}
	id := uintptr(commandUID)
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, id, id, id); e != 0 {
		return fmt.Errorf("setresgid %d: %w", id, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, id, id, id); e != 0 {
		return fmt.Errorf("setresuid %d: %w", id, e)
	}
	return nil
}

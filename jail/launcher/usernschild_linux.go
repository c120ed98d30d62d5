package launcher

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
)

// The user namespace from inside, the launcher's side (the server's, which
// finds the mode and forks launchers into their namespaces, is
// jail's userns_linux.go): the probe child's body. The process limit a
// user-namespace launcher holds its command to is nprocuserns_linux.go.

// inUserNS is true in a launcher forked into a user namespace.
var inUserNS = os.Getenv(wire.UserNSEnv) == "1"

// probeInside is the probe launcher's body: the namespaces a launcher makes
// or enters (mount, with a tmpfs and a proc of its pid namespace; network,
// with loopback up). It returns the exit code, having said what failed.
func probeInside() int {
	runtime.LockOSThread()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s in a user namespace: %v", what, err)
		return 1
	}
	if !confine.HasCapSysAdmin() {
		return fail("capabilities", errors.New("the launcher holds no CAP_SYS_ADMIN in its own namespace (an LSM such as AppArmor took it)"))
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fail("unshare(CLONE_NEWNS)", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fail("making mounts slaves", err)
	}
	dir := "/tmp"
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		return fail("mounting a tmpfs", err)
	}
	if err := unix.Mkdir(dir+"/proc", 0o755); err != nil {
		return fail("mkdir in the tmpfs", err)
	}
	if err := unix.Mount("proc", dir+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fail("mounting proc", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return fail("unshare(CLONE_NEWNET)", err)
	}
	if err := loopbackUp(); err != nil {
		return fail("bringing loopback up", err)
	}
	return 0
}

// Package syspaths is the host's system paths every sandboxed tree is given, in
// one place for the server's commands (supervisor) and a task's harness (task):
// the system's directories, /etc as the host has it but for its secrets, the
// CPUs' topology, /proc, and a few devices.
package syspaths

import (
	"path/filepath"
	"sync"

	"github.com/autobox-dev/autobox/internal/etcsecrets"
)

// SystemReadOnly are what programs find on the user's machine. A private root
// adds a passwd and group of the call's own (jail).
var SystemReadOnly = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
	"/etc",
	// The CPUs' topology and frequencies (Chromium, the JVM, OpenBLAS and
	// numpy size their thread pools from it); nothing else of /sys.
	"/sys/devices/system/cpu",
	"/proc", // other processes' secrets stay out: Landlock denies ptrace-mode access outside the sandbox
}

// NetworkReadOnly are the extra reads that resolving names needs, only when
// the network is allowed.
var NetworkReadOnly = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/services", "/etc/protocols"}

// SystemDevices are the devices every command may open.
var SystemDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// System is the system paths resolved: the canonical paths, and the names that
// lead to them through symlinks (policy.Sandbox.Links).
type System struct {
	ReadOnly, ReadOnlyLinks []string
	Network, NetworkLinks   []string
	Devices                 []string
	etc                     *etcsecrets.Scanner // the secrets of /etc, as it is now
}

// Hidden are the secrets of /etc now that a tree could read but for its
// sandbox (see etcsecrets: those the process's own user cannot read the kernel
// keeps from the trees it starts, which run as that user; root's are all).
func (s *System) Hidden() []string {
	if s.etc == nil {
		return nil
	}
	return s.etc.Readable()
}

// SystemPaths resolves the system paths once: they do not change while a
// process runs, and resolving them costs a dozen syscalls per path.
var SystemPaths = sync.OnceValue(func() *System {
	s := &System{}
	s.ReadOnly, s.ReadOnlyLinks = Existing(SystemReadOnly)
	s.Network, s.NetworkLinks = Existing(NetworkReadOnly)
	s.Devices, _ = Existing(SystemDevices)
	if etc, err := filepath.EvalSymlinks("/etc"); err == nil {
		s.etc = etcsecrets.New(etc)
	}
	return s
})

// Existing returns the canonical paths of those of paths that exist, once
// each, and the paths that are not canonical (a symlink on the way) but lead
// to one.
func Existing(paths []string) (canonical, links []string) {
	canonical = make([]string, 0, len(paths))
	seen := map[string]bool{}
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if real != p {
			links = append(links, p)
		}
		if !seen[real] {
			seen[real] = true
			canonical = append(canonical, real)
		}
	}
	return canonical, links
}

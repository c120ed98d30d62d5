// Package syspaths is the host's system paths every sandboxed tree is given, in
// one place for the server's commands (supervisor, cmdrun) and a task's harness
// (task): the system's directories, /etc as the host has it but for its
// secrets, the CPUs' topology, /proc, and a few devices. Base is the sandbox
// they make, which every tree's policy extends.
//
// It lives here rather than in policy because the base is the host as it is
// when the process runs (links resolved, /etc's secrets found by
// etcsecrets), while policy is the permission model alone and imports nothing
// of ours.
package syspaths

import (
	"path/filepath"
	"slices"
	"sync"

	"github.com/autobox-dev/autobox/internal/etcsecrets"
	"github.com/autobox-dev/autobox/policy"
)

// Base is the sandbox every tree starts from, a server's command and a task's
// harness alike: the system paths read-only by their canonical paths, with the
// names that lead to them through symlinks as Links (/bin -> usr/bin), /etc's
// secrets hidden, the devices, programs may run, no network. NoFollow: the
// paths are canonical, so a link on the way to one when a tree starts was put
// there since. Each call gives slices of its own, which the caller extends.
func Base() *policy.Sandbox {
	sys := SystemPaths()
	return &policy.Sandbox{
		AllowExec: true,
		ReadOnly:  slices.Clone(sys.ReadOnly),
		Links:     slices.Clone(sys.ReadOnlyLinks),
		Hidden:    sys.Hidden(),
		Devices:   slices.Clone(sys.Devices),
		NoFollow:  true,
	}
}

// HostResolver adds to sb the reads that resolving names with the host's
// resolver needs: for a tree on the host's network. A tree in a network of
// its own (PrivateNetwork) gets its own resolver files from its enforcer
// instead, and a tree without network has no use for them.
func HostResolver(sb *policy.Sandbox) {
	sys := SystemPaths()
	sb.ReadOnly = append(sb.ReadOnly, sys.Network...)
	sb.Links = append(sb.Links, sys.NetworkLinks...)
}

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

// Missing lists what of the base sb lacks (read-only paths, links, devices,
// hidden paths, running programs): the check that a tree's policy, a server's
// command's or a task's harness's, extends Base.
func Missing(sb *policy.Sandbox) []string {
	base := Base()
	var missing []string
	for _, l := range []struct {
		what       string
		want, have []string
	}{
		{"read-only", base.ReadOnly, sb.ReadOnly},
		{"link", base.Links, sb.Links},
		{"device", base.Devices, sb.Devices},
		{"hidden", base.Hidden, sb.Hidden},
	} {
		for _, p := range l.want {
			if !slices.Contains(l.have, p) {
				missing = append(missing, l.what+" "+p)
			}
		}
	}
	if !sb.AllowExec {
		missing = append(missing, "running programs (AllowExec)")
	}
	return missing
}

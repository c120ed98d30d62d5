// Package policy is the permission model that every enforcement mechanism shares:
// the mounts a call declares, the limits it asks for, and the filesystem and network
// rules those become for an OS sandbox. It imports nothing from autobox, so the Linux
// (jail) and macOS (seatbelt) enforcers, the supervisor and the store can all use it.
package policy

// Sandbox is what an OS sandbox must enforce for one sandboxed process tree.
// Paths are absolute, clean and canonical (symlinks resolved) before they get here;
// with NoFollow, enforcers never resolve them again.
//
// The model is an allowlist: anything not listed is denied.
type Sandbox struct {
	// ReadOnly paths may be read and executed (files below directories included).
	ReadOnly []string
	// ReadWrite paths may be read, executed, written, created and removed.
	ReadWrite []string
	// DenyWrite paths must stay unwritable even if a broader rule would allow
	// writing (for example the source directory of a mounted workspace).
	// Landlock cannot subtract, so the caller must not build a policy where a
	// ReadWrite path contains a DenyWrite path; Validate rejects that.
	DenyWrite []string
	// Hidden are paths below ReadOnly ones that the command may not read
	// (secrets: /etc/shadow, ssh host keys, ...). An enforcer grants the
	// ReadOnly path around them entry by entry, leaving them out: their names
	// may be listed, their contents are denied. Landlock enforces this on the
	// files themselves, so a hidden path that the host replaces while the
	// command runs stays denied.
	Hidden []string
	// Devices are character devices opened read-write (/dev/null and friends).
	Devices []string
	// AllowNetwork permits sockets of every family; when false only AF_UNIX
	// sockets may be created and TCP bind/connect is denied.
	AllowNetwork bool
	// PrivateNetwork (with AllowNetwork) gives the command a network of its
	// own in which only the proxy for its host allowlist is reachable, at
	// 127.0.0.1:ProxyPort: a network namespace with only loopback on Linux,
	// outbound to that port alone under seatbelt. An enforcer that cannot
	// confine the network so refuses the command.
	PrivateNetwork bool
	// ProxyPort is the loopback port of the proxy (PrivateNetwork).
	ProxyPort int
	// AllowExec permits executing programs (readable paths only). The JS worker
	// runs with AllowExec false after its one re-exec.
	AllowExec bool
	// Links are names that lead to allowed paths through symlinks (/bin ->
	// usr/bin, /lib64, /etc/resolv.conf -> ../run/...). They grant nothing of
	// their own: an enforcer that builds the command's filesystem from the
	// allowed paths alone (the Linux private root) makes them too, as the
	// host has them, so that programs find what they look for by those names.
	Links []string
	// Tmp is the call's own scratch directory, one of ReadWrite: where an
	// enforcer builds the command's filesystem from the allowed paths alone
	// (the Linux private root), it is also what the command finds at /tmp,
	// so that tools that write to /tmp work and write only there. "" leaves
	// /tmp as the other paths make it.
	Tmp string
	// NoFollow makes an enforcer that finds a symbolic link on the way to a
	// path of ReadOnly, ReadWrite or Devices when the command starts refuse the
	// command, rather than follow it: its caller checked them canonical, so a
	// link there now was put there since, perhaps by a command that swaps a
	// directory of its rw mount for a link to somewhere else, so that a later
	// call's mount of that directory would allow the link's target. Commands'
	// policies set it; a task harness's, whose system paths are the host's
	// names (/bin, /lib), does not.
	NoFollow bool
	// Places are mounts bound at the path the caller named (see Place) where
	// the enforcer builds the command's filesystem; an enforcer that does not
	// runs the command through RewriteCommand instead.
	Places []Place
}

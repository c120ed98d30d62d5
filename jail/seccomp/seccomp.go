// Package seccomp builds the classic-BPF seccomp filters that the jail loads.
// It only assembles programs; loading them is the jail's business. It has no
// build constraints, so the filters can be checked in a BPF interpreter on any
// host and for every supported architecture.
package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Filter return values (SECCOMP_RET_*) and errno numbers, identical on every
// supported architecture.
const (
	RetAllow      = 0x7fff0000
	RetUserNotify = 0x7fc00000 // SECCOMP_RET_USER_NOTIF: the listener answers
	retErrno      = 0x00050000

	EPERM        = 1
	ENOSYS       = 38
	EOPNOTSUPP   = 95
	EAFNOSUPPORT = 97
)

// RetErrno is the filter result that fails a call with errno e.
func RetErrno(e uint32) uint32 { return retErrno | e&0xffff }

// Offsets in struct seccomp_data. Both architectures are little-endian, so the
// low 32 bits of argument i are at ArgLow(i).
const (
	OffNr   = 0
	OffArch = 4
)

// ArgLow is the offset of the low 32 bits of system call argument i.
func ArgLow(i int) uint32 { return uint32(16 + 8*i) }

// Denied are the system calls that fail with EPERM whatever their arguments:
// they change mounts, namespaces or kernel state, and none is needed by
// compilers, interpreters, debuggers or shells. The io_uring calls are here
// too: io_uring can create sockets without socket(2), out of reach of the
// family check below, and is a large kernel attack surface.
//
// ptrace and process_vm_readv/writev are in Tracing, denied unless
// Options.AllowTracing.
var Denied = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"open_tree_attr", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "iopl", "ioperm", "acct",
	"quotactl", "quotactl_fd", "lookup_dcookie", "fanotify_init",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
}

// Tracing are the calls that read or change another process's memory and
// registers. A command may make them (Options.AllowTracing): strace, gdb,
// delve and crash reporters trace the command's own processes, and
// Landlock's ptrace rule (every ABI) refuses them for any process outside the
// command's Landlock domain: the launcher, the server, other calls, the
// user's other programs. A JS worker may not.
var Tracing = []string{"ptrace", "process_vm_readv", "process_vm_writev"}

// Unavailable are the system calls that fail with ENOSYS, as on a kernel
// built without them. memfd_secret's pages are mapped into no page table the
// kernel reports as anonymous or shared memory (they are RssFile in
// /proc/<pid>/status), so without a memory cgroup the RSS watchdog did not
// see them: 16 processes held 128 MB under memoryMb 64, and RLIMIT_MEMLOCK
// (8 MB a process) times maxProcesses bounds them, not memoryMb. Programs
// that use it for keys fall back to ordinary memory, as where it is off (the
// default before Linux 6.5).
var Unavailable = []string{"memfd_secret"}

// Argument values the filter looks at. The kernel reads clone's flags, ioctl's
// request, personality's persona and socket's domain as 32-bit values (or, for
// clone, only the low word holds namespace flags), so comparing the low word
// cannot be bypassed by setting high bits.
const (
	NamespaceFlags = 0x00020000 | // CLONE_NEWNS
		0x02000000 | // CLONE_NEWCGROUP
		0x04000000 | // CLONE_NEWUTS
		0x08000000 | // CLONE_NEWIPC
		0x10000000 | // CLONE_NEWUSER
		0x20000000 | // CLONE_NEWPID
		0x40000000 | // CLONE_NEWNET
		0x00000080 // CLONE_NEWTIME
	SockTypeMask  = 0xf // the low bits of socket's type argument; the rest are SOCK_NONBLOCK|SOCK_CLOEXEC
	SockStream    = 1
	SockSeqpacket = 5
	SockDgram     = 2
	SockRaw       = 3
	SockRDM       = 4
	SockPacket    = 10
	TIOCSTI       = 0x5412
	TIOCLINUX     = 0x541c
	PersonaLinux  = 0x0
	PersonaQuery  = 0xffffffff
	AFUnix        = 1
	// PRSetDumpable is prctl's PR_SET_DUMPABLE.
	PRSetDumpable = 4
	AFInet        = 2
	AFInet6       = 10
)

const (
	labelAllow        = "allow"
	labelEPERM        = "eperm"
	labelENOSYS       = "enosys"
	labelEAFNOSUPPORT = "eafnosupport"
	labelEOPNOTSUPP   = "eopnotsupp"
	labelUnixType     = "unixtype"
	labelNetlink      = "netlink"
)

// Options select the parts of the sandbox filter that depend on the policy.
type Options struct {
	// AllowNetwork keeps socket(2) and socketpair(2) open to every family.
	// When false, other families than AF_UNIX fail with EAFNOSUPPORT, as on a
	// kernel built without them, and socket(AF_UNIX) fails with EPERM: a named
	// unix socket is a door to a host service (docker.sock, ssh-agent, the
	// session bus) that Landlock up to ABI 7 does not guard. socketpair(AF_UNIX)
	// stays allowed: it makes a connected pair and reaches nobody.
	AllowNetwork bool
	// StreamPairsOnly (with !AllowNetwork) limits socketpair(AF_UNIX) to stream
	// and seqpacket pairs. A datagram socket can be readdressed: sendto or
	// sendmsg with a destination, or connect, reaches any named datagram
	// socket the process can name (/dev/log, journald, a daemon's socket),
	// and Landlock up to ABI 7 does not guard those. Stream and seqpacket
	// pairs are connected for good: the kernel ignores or refuses a
	// destination. The jail sets it when the command's root holds only its
	// allowed paths cannot be built (where it can, no such socket exists for
	// the command to name).
	StreamPairsOnly bool
	// Loopback (with !AllowNetwork) allows socket(2) for AF_INET and
	// AF_INET6 too, and AF_NETLINK for routing and socket diagnostics (`ip
	// addr`, `ss`): the jail sets it for a command whose network namespace
	// holds loopback alone, where such a socket reaches nothing outside the
	// call.
	Loopback bool
	// AllowTracing allows the Tracing calls (a command's, not a JS worker's).
	AllowTracing bool
	// GuardUnix allows the command unix sockets of its own, whatever its
	// network: socket(2) and socketpair(2) of AF_UNIX for stream and
	// seqpacket sockets, and every connect(2) is sent to the launcher
	// (RetUserNotify), which connects on the command's behalf and refuses a
	// target that is not a socket of the call (jail's unix socket guard).
	// Datagram unix sockets fail with EPERM: sendto and sendmsg may address
	// any named socket, out of the guard's sight. The jail sets it where the
	// command has a root and a pid namespace of its own; without it
	// socket(AF_UNIX) needs AllowNetwork (see AllowNetwork).
	GuardUnix bool
	// PrivateNetwork (with AllowNetwork) says the command's network namespace
	// holds loopback and the proxy alone. A network namespace confines the
	// families whose sockets belong to one (unix, IP, netlink), not those
	// that reach past it: vsock reaches the hypervisor's services whatever
	// the namespace, and others (Bluetooth, CAN, RDS, TIPC, ...) reach
	// hardware or the kernel. socket(2) is then allowed for the confined
	// families alone; any other fails with EAFNOSUPPORT. With AllowNetwork
	// and without it, every family is allowed but AF_VSOCK (see
	// ConfinedFamilies).
	PrivateNetwork bool
	// Launcher, where not 0, is the pid of the process that starts the
	// command (its launcher), and LauncherThread the id of the thread that
	// forks it, as the command will see them: the thread-directed signal
	// calls may not name them (see addLauncherSignals).
	Launcher, LauncherThread int
}

// Socket families socket(2) is checked against, and netlink protocols.
const (
	AFNetlink       = 16
	AFVsock         = 40
	NetlinkRoute    = 0
	NetlinkSockDiag = 4
)

// ConfinedFamilies are the socket families a network namespace confines:
// a socket of one reaches only what is in the namespace (and pathname unix
// sockets, what the command's root and Landlock let it name). Of the others
// AF_VSOCK is refused even with the whole network: it is no part of the
// network a user allows (it reaches the hypervisor's services, where a
// virtual machine's host offers them), and no namespace or firewall of the
// guest confines it. AF_ALG (the kernel's crypto API) reaches nothing and
// is a kernel surface alone; it is refused where the other families are.
var ConfinedFamilies = []uint32{AFUnix, AFInet, AFInet6, AFNetlink}

// Sandbox returns the filter for a sandboxed process tree on arch a.
//
// Foreign architectures (i386 through int 0x80, arm32 compat) and the x32 ABI
// fail with ENOSYS, so the checks below cannot be sidestepped by calling the
// same function under another number. clone3 fails with ENOSYS, as on an old
// kernel, because its flags live in memory the filter cannot read; libc then
// falls back to clone, whose flags it can. fallocate fails with EOPNOTSUPP, as
// on a filesystem without it: it allocates disk blocks without writing them
// (with FALLOC_FL_KEEP_SIZE past the file's end, where RLIMIT_FSIZE does not
// look either), out of sight of the write accounting that holds a command to
// its limit of bytes written; posix_fallocate then writes the blocks, which
// counts.
func Sandbox(a *Arch, o Options) ([]bpf.RawInstruction, error) {
	p := newAsm()
	prologue(p, a)
	var table []dispatchCase
	add := func(name, label string) {
		if nr, ok := a.Nr(name); ok {
			table = append(table, dispatchCase{nr, label})
		}
	}
	for _, name := range Denied {
		add(name, labelEPERM)
	}
	if !o.AllowTracing {
		for _, name := range Tracing {
			add(name, labelEPERM)
		}
	}
	add("clone3", labelENOSYS)
	for _, name := range Unavailable {
		add(name, labelENOSYS)
	}
	add("fallocate", labelEOPNOTSUPP)
	add("clone", "clone")
	add("ioctl", "ioctl")
	add("personality", "personality")
	add("prctl", "prctl")
	table = append(table, setIDCases(a)...)
	addTargets(add)
	if o.Launcher > 0 {
		addLauncherSignals(add)
	}
	add("socket", "socket")
	if !o.AllowNetwork || o.GuardUnix {
		add("socketpair", "socketpair")
	}
	if o.GuardUnix {
		// The guard is the only wall in front of host sockets: a table
		// without connect must not build a filter that lets it through.
		if _, ok := a.Nr("connect"); !ok {
			return nil, fmt.Errorf("seccomp: %s has no number for connect", a.Name)
		}
		add("connect", "notify")
	}
	if err := p.dispatchTable(table, labelAllow); err != nil {
		return nil, err
	}

	p.label("clone")
	p.load(ArgLow(0))
	p.jump(bpf.JumpBitsSet, NamespaceFlags, labelEPERM, labelAllow)

	p.label("ioctl")
	p.load(ArgLow(1))
	p.jump(bpf.JumpEqual, TIOCSTI, labelEPERM, "")
	p.jump(bpf.JumpEqual, TIOCLINUX, labelEPERM, labelAllow)

	// Only the default persona and the query are allowed: other personas turn
	// off ASLR (ADDR_NO_RANDOMIZE) or make readable memory executable.
	p.label("personality")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, PersonaLinux, labelAllow, "")
	p.jump(bpf.JumpEqual, PersonaQuery, labelAllow, labelEPERM)

	setIDChecks(p, a)

	// A process that makes itself not dumpable hides its /proc files (its
	// bytes written, among them) from the watchdog, which runs as the same
	// user: PR_SET_DUMPABLE may only set it again.
	p.label("prctl")
	p.load(ArgLow(0))
	p.jump(bpf.JumpEqual, PRSetDumpable, "", labelAllow)
	p.load(ArgLow(1))
	p.jump(bpf.JumpEqual, 1, labelAllow, labelEPERM)

	emitTargets(p)
	if o.Launcher > 0 {
		emitLauncherSignals(p, o)
	}

	p.label("socket")
	p.load(ArgLow(0))
	if o.GuardUnix {
		p.jump(bpf.JumpEqual, AFUnix, labelUnixType, "")
	}
	switch {
	case o.AllowNetwork && o.PrivateNetwork:
		for i, fam := range ConfinedFamilies {
			els := ""
			if i == len(ConfinedFamilies)-1 {
				els = labelEAFNOSUPPORT
			}
			p.jump(bpf.JumpEqual, fam, labelAllow, els)
		}
	case o.AllowNetwork:
		p.jump(bpf.JumpEqual, AFVsock, labelEAFNOSUPPORT, labelAllow)
	}
	if !o.AllowNetwork {
		if o.Loopback {
			p.jump(bpf.JumpEqual, AFInet, labelAllow, "")
			p.jump(bpf.JumpEqual, AFInet6, labelAllow, "")
			p.jump(bpf.JumpEqual, AFNetlink, labelNetlink, "")
		}
		p.jump(bpf.JumpEqual, AFUnix, labelEPERM, labelEAFNOSUPPORT)
	}
	if o.Loopback && !o.AllowNetwork {
		// Routing and socket diagnostics of the command's own namespace; not
		// the kernel's other netlink families (uevents, audit, netfilter).
		p.label(labelNetlink)
		p.load(ArgLow(2))
		p.jump(bpf.JumpEqual, NetlinkRoute, labelAllow, "")
		p.jump(bpf.JumpEqual, NetlinkSockDiag, labelAllow, labelEAFNOSUPPORT)
	}
	if o.GuardUnix {
		p.label("socketpair")
		p.load(ArgLow(0))
		other := labelEAFNOSUPPORT
		if o.AllowNetwork {
			other = labelAllow // the kernel answers (EOPNOTSUPP for IP)
		}
		p.jump(bpf.JumpEqual, AFUnix, labelUnixType, other)
		// Stream and seqpacket only: a datagram socket can be addressed.
		p.label(labelUnixType)
		p.load(ArgLow(1))
		p.alu(bpf.ALUOpAnd, SockTypeMask)
		p.jump(bpf.JumpEqual, SockStream, labelAllow, "")
		p.jump(bpf.JumpEqual, SockSeqpacket, labelAllow, labelEPERM)
		p.label("notify")
		p.ret(RetUserNotify)
	} else if !o.AllowNetwork {
		p.label("socketpair")
		p.load(ArgLow(0))
		if !o.StreamPairsOnly {
			p.jump(bpf.JumpEqual, AFUnix, labelAllow, labelEAFNOSUPPORT)
		} else {
			// AF_UNIX knows stream, dgram and seqpacket; raw and rdm are
			// aliases of dgram there.
			p.jump(bpf.JumpEqual, AFUnix, "", labelEAFNOSUPPORT)
			p.load(ArgLow(1))
			p.alu(bpf.ALUOpAnd, SockTypeMask)
			p.jump(bpf.JumpEqual, SockDgram, labelEPERM, "")
			p.jump(bpf.JumpEqual, SockRaw, labelEPERM, "")
			p.jump(bpf.JumpEqual, SockRDM, labelEPERM, "")
			p.jump(bpf.JumpEqual, SockPacket, labelEPERM, labelAllow)
		}
	}
	p.label(labelEAFNOSUPPORT)
	p.ret(RetErrno(EAFNOSUPPORT))
	p.label(labelEOPNOTSUPP)
	p.ret(RetErrno(EOPNOTSUPP))
	epilogue(p)
	return p.program()
}

// prologue leaves the system call number in A, or returns ENOSYS for a call
// that is not in a's native ABI.
func prologue(p *asm, a *Arch) {
	p.load(OffArch)
	p.jump(bpf.JumpEqual, a.AuditArch, "", labelENOSYS)
	p.load(OffNr)
	if a.X32 {
		p.jump(bpf.JumpGreaterOrEqual, x32SyscallBit, labelENOSYS, "")
	}
}

func epilogue(p *asm) {
	p.label(labelAllow)
	p.ret(RetAllow)
	p.label(labelEPERM)
	p.ret(RetErrno(EPERM))
	p.label(labelENOSYS)
	p.ret(RetErrno(ENOSYS))
}

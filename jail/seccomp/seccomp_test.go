package seccomp

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"
)

// seccompData encodes struct seccomp_data for the x/net/bpf interpreter. The
// interpreter loads words big-endian while the kernel loads them in native
// (little-endian) order, so each 32-bit word is stored big-endian at the offset
// where the kernel finds it: the low half of a 64-bit argument first.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[OffNr:], nr)
	binary.BigEndian.PutUint32(b[OffArch:], arch)
	for i, v := range args {
		binary.BigEndian.PutUint32(b[ArgLow(i):], uint32(v))
		binary.BigEndian.PutUint32(b[ArgLow(i)+4:], uint32(v>>32))
	}
	return b
}

type call struct {
	name string
	arch uint32 // 0: the filter's native arch
	nr   uint32 // used when name == ""
	args []uint64
	want uint32
}

func run(t *testing.T, raw []bpf.RawInstruction, a *Arch, calls []call) {
	t.Helper()
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("filter does not disassemble")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	for _, c := range calls {
		nr := c.nr
		if c.name != "" {
			var ok bool
			if nr, ok = a.Nr(c.name); !ok {
				t.Fatalf("%s has no %s", a.Name, c.name)
			}
		}
		arch := c.arch
		if arch == 0 {
			arch = a.AuditArch
		}
		got, err := vm.Run(seccompData(arch, nr, c.args...))
		if err != nil {
			t.Fatalf("%s %s%#x: %v", a.Name, c.name, c.args, err)
		}
		if uint32(got) != c.want {
			t.Errorf("%s: %s(nr %d, args %#x, arch %#x) = %s, want %s", a.Name, c.name, nr, c.args, arch, ret(uint32(got)), ret(c.want))
		}
	}
}

func ret(v uint32) string {
	if v == RetAllow {
		return "ALLOW"
	}
	if v&0xffff0000 == retErrno {
		return fmt.Sprintf("ERRNO(%d)", v&0xffff)
	}
	return fmt.Sprintf("%#x", v)
}

var (
	allow        = uint32(RetAllow)
	eperm        = RetErrno(EPERM)
	enosys       = RetErrno(ENOSYS)
	eafnosupport = RetErrno(EAFNOSUPPORT)
	eopnotsupp   = RetErrno(EOPNOTSUPP)
)

func sandboxCalls(a *Arch, allowNetwork bool) []call {
	var calls []call
	for _, name := range append(append([]string(nil), Denied...), Tracing...) {
		if _, ok := a.Nr(name); ok {
			calls = append(calls, call{name: name, want: eperm})
			// Arguments do not matter for these.
			calls = append(calls, call{name: name, args: []uint64{1, 2, 3}, want: eperm})
		}
	}
	const (
		sigchld     = 17
		threadFlags = 0x00010000 | 0x00000100 | 0x00000200 | 0x00000400 | 0x00000800 | 0x00080000 | 0x00100000 | 0x00200000 | 0x01000000 // CLONE_THREAD|VM|FS|FILES|SIGHAND|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID
		vforkFlags  = 0x00004000 | 0x00000100 | sigchld                                                                                  // CLONE_VFORK|CLONE_VM, as Go's ForkExec
		afInet      = 2
		afInet6     = 10
		afNetlink   = 16
		afPacket    = 17
		tcgets      = 0x5401
	)
	calls = append(calls,
		call{name: "execve", want: allow},
		call{name: "execveat", want: allow},
		call{name: "clone", args: []uint64{sigchld}, want: allow},
		call{name: "clone", args: []uint64{threadFlags}, want: allow},
		call{name: "clone", args: []uint64{vforkFlags}, want: allow},
		call{name: "clone3", want: enosys},
		call{name: "memfd_secret", want: enosys},
		call{name: "fallocate", want: eopnotsupp},
		call{name: "fallocate", args: []uint64{3, 1, 0, 1 << 40}, want: eopnotsupp}, // FALLOC_FL_KEEP_SIZE
		call{name: "ioctl", args: []uint64{0, TIOCSTI}, want: eperm},
		call{name: "ioctl", args: []uint64{0, TIOCLINUX}, want: eperm},
		// The kernel truncates the request to 32 bits; so does the check.
		call{name: "ioctl", args: []uint64{0, 1<<32 | TIOCSTI}, want: eperm},
		call{name: "ioctl", args: []uint64{0, tcgets}, want: allow},
		call{name: "ioctl", args: []uint64{TIOCSTI, tcgets}, want: allow},
		call{name: "personality", args: []uint64{PersonaLinux}, want: allow},
		call{name: "personality", args: []uint64{PersonaQuery}, want: allow},
		call{name: "personality", args: []uint64{0x0040000}, want: eperm}, // ADDR_NO_RANDOMIZE
		call{name: "personality", args: []uint64{0x0400000}, want: eperm}, // READ_IMPLIES_EXEC
		call{name: "personality", args: []uint64{0x8}, want: eperm},       // PER_LINUX32
		call{name: "prctl", args: []uint64{PRSetDumpable, 0}, want: eperm},
		call{name: "prctl", args: []uint64{PRSetDumpable, 2}, want: eperm},
		call{name: "prctl", args: []uint64{PRSetDumpable, 1}, want: allow},
		call{name: "prctl", args: []uint64{15, 0}, want: allow}, // PR_SET_NAME
		call{name: "socketpair", args: []uint64{AFUnix, 1}, want: allow},
		// Foreign ABIs: execve through int 0x80 is nr 11 on i386.
		call{arch: AuditArchI386, nr: 11, want: enosys},
		call{arch: AuditArchARM, nr: 11, want: enosys},
		call{arch: AuditArchI386, nr: 0, want: enosys},
	)
	for _, ns := range []uint64{0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80} {
		calls = append(calls,
			call{name: "clone", args: []uint64{ns | sigchld}, want: eperm},
			call{name: "clone", args: []uint64{ns | vforkFlags}, want: eperm})
	}
	netWant, unixWant := eafnosupport, eperm
	if allowNetwork {
		netWant, unixWant = allow, allow
	}
	calls = append(calls,
		call{name: "socket", args: []uint64{AFUnix, 1}, want: unixWant},
		call{name: "socket", args: []uint64{1<<32 | AFUnix, 1}, want: unixWant})
	for _, fam := range []uint64{afInet, afInet6, afNetlink, afPacket, 1<<32 | afInet, 0} {
		calls = append(calls,
			call{name: "socket", args: []uint64{fam, 1}, want: netWant},
			call{name: "socketpair", args: []uint64{fam, 1}, want: netWant})
	}
	if a.X32 {
		calls = append(calls,
			call{nr: x32SyscallBit | 59, want: enosys}, // x32 execve
			call{nr: x32SyscallBit | 41, want: enosys}, // x32 socket
			call{nr: 0xffffffff, want: enosys})
	}
	// Set-ID bits in every argument that is a mode: refused; a mode without
	// them (and the set-ID bits in another argument) allowed.
	for _, m := range modeCalls[a.Name] {
		for _, bits := range []uint64{0o4755, 0o2755, 0o6000, 1<<32 | 0o4000} {
			args := make([]uint64, 4)
			args[m.arg] = bits
			calls = append(calls, call{nr: m.nr, args: args, want: eperm})
		}
		args := []uint64{0o6000, 0o6000, 0o6000, 0o6000}
		args[m.arg] = 0o755
		calls = append(calls, call{nr: m.nr, args: args, want: allow})
	}
	// read, write, openat, close, exit_group.
	plain := []uint32{0, 1, 257, 3, 231}
	if a == ARM64 {
		plain = []uint32{63, 64, 56, 57, 94}
	}
	for _, nr := range plain {
		calls = append(calls, call{nr: nr, want: allow})
	}
	return calls
}

// eachSandbox runs f on the sandbox filter of each architecture, with and
// without network.
func eachSandbox(t *testing.T, f func(t *testing.T, a *Arch, net bool, raw []bpf.RawInstruction)) {
	for _, a := range []*Arch{AMD64, ARM64} {
		for _, net := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/net=%v", a.Name, net), func(t *testing.T) {
				raw, err := Sandbox(a, Options{AllowNetwork: net})
				if err != nil {
					t.Fatal(err)
				}
				f(t, a, net, raw)
			})
		}
	}
}

func TestSandboxFilter(t *testing.T) {
	eachSandbox(t, func(t *testing.T, a *Arch, net bool, raw []bpf.RawInstruction) {
		run(t, raw, a, append(sandboxCalls(a, net), everyNumber(a, net)...))
	})
}

// TestStreamPairsOnly: without network and with StreamPairsOnly, a unix
// socketpair may be a stream or seqpacket pair (whatever flags ride along in
// the type), never a datagram one, which could be readdressed to a host socket.
func TestStreamPairsOnly(t *testing.T) {
	const (
		stream, seqpacket = 1, 5
		nonblockCloexec   = 0x800 | 0x80000
	)
	for _, a := range []*Arch{AMD64, ARM64} {
		raw, err := Sandbox(a, Options{StreamPairsOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		calls := []call{
			{name: "socketpair", args: []uint64{AFUnix, stream}, want: allow},
			{name: "socketpair", args: []uint64{AFUnix, stream | nonblockCloexec}, want: allow},
			{name: "socketpair", args: []uint64{AFUnix, seqpacket}, want: allow},
			{name: "socketpair", args: []uint64{AFUnix, SockDgram}, want: eperm},
			{name: "socketpair", args: []uint64{AFUnix, SockDgram | nonblockCloexec}, want: eperm},
			{name: "socketpair", args: []uint64{AFUnix, 1<<32 | SockDgram}, want: eperm},
			{name: "socketpair", args: []uint64{AFUnix, SockRaw}, want: eperm},
			{name: "socketpair", args: []uint64{AFUnix, SockRDM}, want: eperm},
			{name: "socketpair", args: []uint64{AFUnix, SockPacket}, want: eperm},
			{name: "socketpair", args: []uint64{2, stream}, want: eafnosupport},
		}
		// Everything else is as without the option.
		calls = append(calls, sandboxCalls(a, false)...)
		run(t, raw, a, calls)
		// With network the option changes nothing: socketpair is not looked at.
		raw, err = Sandbox(a, Options{AllowNetwork: true, StreamPairsOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		run(t, raw, a, []call{{name: "socketpair", args: []uint64{AFUnix, SockDgram}, want: allow}})
	}
}

func TestEveryDeniedCallIsKnown(t *testing.T) {
	for _, name := range Denied {
		_, onAMD := AMD64.Nr(name)
		_, onARM := ARM64.Nr(name)
		if !onAMD && !onARM {
			t.Errorf("%s is in Denied but in no architecture table", name)
		}
	}
	for _, name := range []string{"clone", "clone3", "fallocate", "ioctl", "personality", "socket", "socketpair", "execve", "execveat"} {
		for _, a := range []*Arch{AMD64, ARM64} {
			if _, ok := a.Nr(name); !ok {
				t.Errorf("%s lacks %s, which the filter needs", a.Name, name)
			}
		}
	}
}

// everyNumber runs every system call number below 1024 through the filter, with
// arguments that no argument check refuses: exactly the denied calls fail, and
// clone3 fails with ENOSYS. It guards the binary search against a number that
// falls between two branches.
func everyNumber(a *Arch, allowNetwork bool) []call {
	want := map[uint32]uint32{}
	for _, name := range append(append([]string(nil), Denied...), Tracing...) {
		if nr, ok := a.Nr(name); ok {
			want[nr] = eperm
		}
	}
	for _, name := range DeniedTargets {
		if nr, ok := a.Nr(name); ok {
			want[nr] = eperm
		}
	}
	for _, name := range append(append([]string{"clone3"}, NoPidfdOpen...), Unavailable...) {
		nr, _ := a.Nr(name)
		want[nr] = enosys
	}
	selfOnly := map[uint32]bool{}
	for _, name := range PidZeroOnly {
		nr, _ := a.Nr(name)
		selfOnly[nr] = true
	}
	setprio, _ := a.Nr("setpriority")
	ioprio, _ := a.Nr("ioprio_set")
	fallocate, _ := a.Nr("fallocate")
	want[fallocate] = eopnotsupp
	want[openat2Nr] = enosys
	sock, _ := a.Nr("socket")
	pers, _ := a.Nr("personality")
	var calls []call
	for nr := uint32(0); nr < 1024; nr++ {
		w, ok := want[nr]
		if !ok {
			w = allow
		}
		// AF_UNIX, no clone flags, TCGETS, PER_LINUX: allowed by every argument
		// check except socket(AF_UNIX) without network.
		args := []uint64{AFUnix, 0x5401}
		switch {
		case nr == pers:
			args = []uint64{PersonaLinux}
		case selfOnly[nr], nr == setprio:
			args = []uint64{0, 0} // the caller
		case nr == ioprio:
			args = []uint64{IoprioWhoProc, 0}
		}
		for _, m := range modeCalls[a.Name] {
			if m.nr == nr {
				args = []uint64{1, 0o755, 0o755, 0o755} // a mode without set-ID bits
			}
		}
		if nr == sock && !allowNetwork {
			w = eperm
		}
		calls = append(calls, call{nr: nr, args: args, want: w})
	}
	return calls
}

// TestSandboxFilterIsShallow bounds the longest path through the filter: the
// dispatch on the system call number is a binary search, not a chain.
func TestSandboxFilterIsShallow(t *testing.T) {
	raw, err := Sandbox(AMD64, Options{})
	if err != nil {
		t.Fatal(err)
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("filter does not disassemble")
	}
	// Jumps only go forward, so the longest path to the end from each instruction
	// is known once the instructions after it are.
	longest := make([]int, len(insns)+1)
	for i := len(insns) - 1; i >= 0; i-- {
		next := []int{i + 1}
		switch in := insns[i].(type) {
		case bpf.RetConstant:
			next = nil
		case bpf.JumpIf:
			next = []int{i + 1 + int(in.SkipTrue), i + 1 + int(in.SkipFalse)}
		case bpf.Jump:
			next = []int{i + 1 + int(in.Skip)}
		}
		for _, n := range next {
			longest[i] = max(longest[i], 1+longest[n])
		}
		if next == nil {
			longest[i] = 1
		}
	}
	t.Logf("%d instructions, longest path %d", len(insns), longest[0])
	// The prologue (4), a binary search over ~75 numbers (8) and the longest
	// argument check (ioprio_set's, 6); a chain would be ~80.
	if longest[0] > 18 {
		t.Errorf("longest path through the filter is %d instructions, want at most 18", longest[0])
	}
}

// TestGuardUnix: with GuardUnix, unix stream and seqpacket sockets and pairs
// are allowed whatever the network, datagram ones refused, and every connect
// goes to the listener; the rest is as without the option.
func TestGuardUnix(t *testing.T) {
	const nonblockCloexec = 0x800 | 0x80000
	for _, a := range []*Arch{AMD64, ARM64} {
		for _, o := range []Options{
			{GuardUnix: true, Loopback: true},
			{GuardUnix: true, AllowNetwork: true},
			{GuardUnix: true, AllowNetwork: true, PrivateNetwork: true},
		} {
			raw, err := Sandbox(a, o)
			if err != nil {
				t.Fatal(err)
			}
			calls := []call{
				{name: "connect", want: RetUserNotify},
				{name: "connect", args: []uint64{3, 0, 110}, want: RetUserNotify},
			}
			for _, sys := range []string{"socket", "socketpair"} {
				calls = append(calls,
					call{name: sys, args: []uint64{AFUnix, SockStream}, want: allow},
					call{name: sys, args: []uint64{AFUnix, SockStream | nonblockCloexec}, want: allow},
					call{name: sys, args: []uint64{1<<32 | AFUnix, SockSeqpacket}, want: allow},
					call{name: sys, args: []uint64{AFUnix, SockDgram}, want: eperm},
					call{name: sys, args: []uint64{AFUnix, SockDgram | nonblockCloexec}, want: eperm},
					call{name: sys, args: []uint64{AFUnix, 1<<32 | SockDgram}, want: eperm},
					call{name: sys, args: []uint64{AFUnix, SockRaw}, want: eperm},
					call{name: sys, args: []uint64{AFUnix, SockRDM}, want: eperm},
					call{name: sys, args: []uint64{AFUnix, SockPacket}, want: eperm},
				)
			}
			if !o.AllowNetwork {
				calls = append(calls,
					call{name: "socketpair", args: []uint64{AFInet, SockStream}, want: eafnosupport},
					call{name: "socket", args: []uint64{AFInet, SockStream}, want: allow})
			} else {
				calls = append(calls, call{name: "socketpair", args: []uint64{AFInet, SockStream}, want: allow})
			}
			t.Run(fmt.Sprintf("%s/%+v", a.Name, o), func(t *testing.T) { run(t, raw, a, calls) })
		}
	}
}

// TestLoopbackNetlink: in a namespace with loopback alone, netlink sockets
// for routing and socket diagnostics are allowed, no other netlink family.
func TestLoopbackNetlink(t *testing.T) {
	for _, a := range []*Arch{AMD64, ARM64} {
		raw, err := Sandbox(a, Options{Loopback: true})
		if err != nil {
			t.Fatal(err)
		}
		run(t, raw, a, []call{
			{name: "socket", args: []uint64{AFNetlink, 3, NetlinkRoute}, want: allow},
			{name: "socket", args: []uint64{AFNetlink, 3, NetlinkSockDiag}, want: allow},
			{name: "socket", args: []uint64{AFNetlink, 3, 15}, want: eafnosupport}, // NETLINK_KOBJECT_UEVENT
			{name: "socket", args: []uint64{AFNetlink, 3, 9}, want: eafnosupport},  // NETLINK_AUDIT
			{name: "socket", args: []uint64{AFNetlink, 3, 1<<32 | 9}, want: eafnosupport},
			{name: "socket", args: []uint64{AFInet6, SockStream}, want: allow},
			{name: "socket", args: []uint64{17, 3}, want: eafnosupport}, // AF_PACKET
			{name: "socket", args: []uint64{AFUnix, SockStream}, want: eperm},
		})
	}
}

// TestAllowTracing: a command's filter lets ptrace and process_vm_readv/writev
// through (Landlock keeps them to the call's own processes); the rest is as
// without the option.
func TestAllowTracing(t *testing.T) {
	for _, a := range []*Arch{AMD64, ARM64} {
		raw, err := Sandbox(a, Options{AllowTracing: true})
		if err != nil {
			t.Fatal(err)
		}
		var calls []call
		for _, name := range Tracing {
			calls = append(calls, call{name: name, args: []uint64{16, 1}, want: allow})
		}
		for _, name := range Denied {
			if _, ok := a.Nr(name); ok {
				calls = append(calls, call{name: name, want: eperm})
			}
		}
		run(t, raw, a, calls)
	}
}

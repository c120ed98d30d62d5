package restrict

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/seccomp"
)

// SockFilter converts an assembled program to the kernel's instructions.
func SockFilter(raw []bpf.RawInstruction) []unix.SockFilter {
	insns := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		insns[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return insns
}

// LoadFilter installs a filter on the calling thread (all threads with TSYNC).
// With TSYNC a positive return is the id of a thread that could not be synced.
func LoadFilter(insns []unix.SockFilter, flags uintptr) (int, error) {
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(insns)
	if e != 0 {
		return 0, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", e)
	}
	return int(r), nil
}

// SeccompSupport reports whether seccomp filters with SECCOMP_RET_ERRNO
// work, the architecture filters are built for ("" when none is), and
// whether PR_SET_NO_NEW_PRIVS is available.
func SeccompSupport() (filters bool, arch string, noNewPrivs bool) {
	// SECCOMP_GET_ACTION_AVAIL answers only if filter mode is compiled in.
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if a, ok := seccomp.ArchFor(runtime.GOARCH); ok {
		arch = a.Name
	}
	_, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	return e == 0, arch, err == nil
}

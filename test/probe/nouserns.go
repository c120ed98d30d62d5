//go:build linux

package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// noUserNS execs argv under a seccomp filter that refuses to make user
// namespaces, as a container's profile or a host with
// user.max_user_namespaces=0 does: clone and unshare with CLONE_NEWUSER fail
// with EPERM, clone3 (whose flags a filter cannot read) with ENOSYS, so libc
// and Go fall back to clone. The tests start a server so to check the mode it
// falls back to.
func noUserNS(argv []string) error {
	return refuseNamespaceForks("nouserns", argv, unix.CLONE_NEWUSER, unix.EPERM)
}

// refuseNamespaceForks execs argv under a seccomp filter that makes clone and
// unshare with any of flags fail with errno, and clone3 (whose flags a filter
// cannot read) with ENOSYS, so that libc and Go fall back to clone.
func refuseNamespaceForks(mode string, argv []string, flags uint32, errno unix.Errno) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: no command", mode)
	}
	nr := map[string]uint32{"amd64": 56, "arm64": 220}[runtime.GOARCH] // clone
	unshare := map[string]uint32{"amd64": 272, "arm64": 97}[runtime.GOARCH]
	const clone3 = 435
	if nr == 0 {
		return fmt.Errorf("%s: no syscall numbers for %s", mode, runtime.GOARCH)
	}
	const (
		allow = 0x7fff0000
		errn  = 0x00050000
		enosy = errn | 38
	)
	return execUnderFilter([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: clone3, SkipTrue: 6},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unshare, SkipFalse: 2},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // flags, low word
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: flags, SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: errn | uint32(errno)},
		bpf.RetConstant{Val: allow}, // unreachable
		bpf.RetConstant{Val: enosy},
	}, argv)
}

// execUnderFilter execs argv under the seccomp filter prog, on every thread.
func execUnderFilter(insns []bpf.Instruction, argv []string) error {
	prog, err := bpf.Assemble(insns)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filter[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	// TSYNC: every thread of this process, so the exec below is filtered
	// whichever thread runs it.
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return syscall.Exec(argv[0], argv, os.Environ())
}

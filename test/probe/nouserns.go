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
	return refuseNamespaceForksIf(mode, argv, flags, 0, 0, errno)
}

// refuseNamespaceForksIf is refuseNamespaceForks for the forks that also ask
// for the namespace with, and not for without (0: any).
func refuseNamespaceForksIf(mode string, argv []string, flags, with, without uint32, errno unix.Errno) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: no command", mode)
	}
	prog, err := namespaceForkFilter(runtime.GOARCH, flags, with, without, errno)
	if err != nil {
		return fmt.Errorf("%s: %w", mode, err)
	}
	return execUnderFilter(prog, argv)
}

// namespaceForkFilter is the filter of refuseNamespaceForksIf on arch.
func namespaceForkFilter(arch string, flags, with, without uint32, errno unix.Errno) ([]bpf.Instruction, error) {
	nr := map[string]uint32{"amd64": 56, "arm64": 220}[arch] // clone
	unshare := map[string]uint32{"amd64": 272, "arm64": 97}[arch]
	const clone3 = 435
	if nr == 0 {
		return nil, fmt.Errorf("no syscall numbers for %s", arch)
	}
	const (
		allow = 0x7fff0000
		errn  = 0x00050000
		enosy = errn | 38
	)
	// The flag tests, each jumping to allow when the fork is not refused;
	// then allow, refuse, ENOSYS.
	var tests []bpf.Instruction
	if with != 0 {
		tests = append(tests, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: with, SkipFalse: 0})
	}
	if without != 0 {
		tests = append(tests, bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: without, SkipFalse: 0})
	}
	tests = append(tests, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: flags, SkipFalse: 0, SkipTrue: 1})
	for i := range tests { // to the allow after the last test
		j := tests[i].(bpf.JumpIf)
		j.SkipFalse = uint8(len(tests) - 1 - i)
		tests[i] = j
	}
	n := uint8(len(tests))
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: clone3, SkipTrue: 5 + n},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unshare, SkipFalse: 1 + n},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // flags, low word
	}
	prog = append(prog, tests...)
	prog = append(prog,
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: errn | uint32(errno)},
		bpf.RetConstant{Val: enosy},
	)
	return prog, nil
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

//go:build linux

package main

import (
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// nsAgain execs argv under a seccomp filter that makes every clone or unshare
// asking for a new pid or user namespace fail with EAGAIN, as a fork does
// while a fork bomb next door holds the user's process count or a pids
// cgroup full (clone3, whose flags a filter cannot read, fails with ENOSYS,
// so libc and Go fall back to clone). Threads and plain forks go on. The
// tests start a server so to check that such an error fails the call and
// leaves the server's mode as it was.
func nsAgain(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("nsagain: no command")
	}
	nr := map[string]uint32{"amd64": 56, "arm64": 220}[runtime.GOARCH] // clone
	unshare := map[string]uint32{"amd64": 272, "arm64": 97}[runtime.GOARCH]
	const clone3 = 435
	if nr == 0 {
		return fmt.Errorf("nsagain: no syscall numbers for %s", runtime.GOARCH)
	}
	const (
		allow  = 0x7fff0000
		eagain = 0x00050000 | 11
		enosys = 0x00050000 | 38
	)
	return execUnderFilter([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: clone3, SkipTrue: 6},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unshare, SkipFalse: 2},
		bpf.LoadAbsolute{Off: 16, Size: 4}, // flags, low word
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_NEWUSER | unix.CLONE_NEWPID, SkipTrue: 1},
		bpf.RetConstant{Val: allow},
		bpf.RetConstant{Val: eagain},
		bpf.RetConstant{Val: allow}, // unreachable
		bpf.RetConstant{Val: enosys},
	}, argv)
}

//go:build linux

package main

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// noLandlock execs argv under a seccomp filter that makes Landlock's system
// calls fail with ENOSYS, as on a kernel built without Landlock (or one that
// does not enable it at boot). The tests start a server so to check what it
// says of the JS workers it cannot jail.
func noLandlock(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("nolandlock: no command")
	}
	const (
		allow = 0x7fff0000
		enosy = 0x00050000 | 38
		// landlock_create_ruleset, landlock_add_rule, landlock_restrict_self:
		// the same numbers on every architecture.
		first, last = 444, 446
	)
	return execUnderFilter([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 0, Size: 4}, // nr
		bpf.JumpIf{Cond: bpf.JumpLessThan, Val: first, SkipTrue: 2},
		bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: last, SkipTrue: 1},
		bpf.RetConstant{Val: enosy},
		bpf.RetConstant{Val: allow},
	}, argv)
}

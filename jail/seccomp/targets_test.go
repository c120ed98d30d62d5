package seccomp

import (
	"testing"

	"golang.org/x/net/bpf"
)

// TestTargets: every system call that takes a pid, process group or user as
// its target may act on the caller (pid or who 0) and on nothing else, with
// any other argument the same; each row is one call with its self form and
// its other forms. The kernel reads these arguments as 32-bit ints: a high
// word does not turn another pid into 0.
func TestTargets(t *testing.T) {
	const (
		other  = 4242
		rlimAS = 9
	)
	eachSandbox(t, func(t *testing.T, a *Arch, _ bool, raw []bpf.RawInstruction) {
		var calls []call
		for _, name := range PidZeroOnly {
			calls = append(calls,
				call{name: name, args: []uint64{0, rlimAS, 0x7000, 0}, want: allow},
				call{name: name, args: []uint64{other, rlimAS, 0x7000, 0}, want: eperm},
				call{name: name, args: []uint64{1, rlimAS}, want: eperm},
				call{name: name, args: []uint64{0xffffffff}, want: eperm}, // -1
				call{name: name, args: []uint64{1 << 32}, want: allow},    // read as pid 0
				call{name: name, args: []uint64{1<<32 | other}, want: eperm})
		}
		for _, name := range DeniedTargets {
			calls = append(calls,
				call{name: name, args: []uint64{0, 0, 0, 0}, want: eperm},
				call{name: name, args: []uint64{3, other}, want: eperm})
		}
		calls = append(calls,
			call{name: "pidfd_open", args: []uint64{other, 0}, want: enosys},
			call{name: "pidfd_open", args: []uint64{0, 0}, want: enosys},
			// nice(1), renice of the caller's group.
			call{name: "setpriority", args: []uint64{PrioProcess, 0, 10}, want: allow},
			call{name: "setpriority", args: []uint64{PrioPgrp, 0, 10}, want: allow},
			call{name: "setpriority", args: []uint64{PrioProcess, other, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{PrioPgrp, other, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{PrioUser, 0, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{PrioUser, 1000, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{3, 0, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{1<<32 | PrioUser, 0, 10}, want: eperm},
			call{name: "setpriority", args: []uint64{PrioProcess, 1<<32 | other, 10}, want: eperm},
			// ionice -c3 of the caller.
			call{name: "ioprio_set", args: []uint64{IoprioWhoProc, 0, 3 << 13}, want: allow},
			call{name: "ioprio_set", args: []uint64{IoprioWhoPgrp, 0, 3 << 13}, want: allow},
			call{name: "ioprio_set", args: []uint64{IoprioWhoProc, other, 3 << 13}, want: eperm},
			call{name: "ioprio_set", args: []uint64{IoprioWhoPgrp, other, 3 << 13}, want: eperm},
			call{name: "ioprio_set", args: []uint64{IoprioWhoUser, 0, 3 << 13}, want: eperm},
			call{name: "ioprio_set", args: []uint64{0, 0, 3 << 13}, want: eperm},
			call{name: "ioprio_set", args: []uint64{4, 0, 3 << 13}, want: eperm},
		)
		run(t, raw, a, calls)
	})
}

// TestLauncherSignals: with the launcher's pid and forking thread given, the
// thread-directed signal calls may not name them (by their low 32 bits, as
// the kernel reads them) and may name any other process or thread; without
// them (the positive control), naming the launcher is left to Landlock.
func TestLauncherSignals(t *testing.T) {
	const (
		launcher = 4100
		thread   = 4107
		other    = 4242
		sigkill  = 9
	)
	for _, a := range []*Arch{AMD64, ARM64} {
		t.Run(a.Name, func(t *testing.T) {
			raw, err := Sandbox(a, Options{Launcher: launcher, LauncherThread: thread})
			if err != nil {
				t.Fatal(err)
			}
			run(t, raw, a, []call{
				{name: "tgkill", args: []uint64{launcher, launcher, sigkill}, want: eperm},
				{name: "tgkill", args: []uint64{launcher, thread, sigkill}, want: eperm},
				{name: "tgkill", args: []uint64{1<<32 | launcher, thread, sigkill}, want: eperm},
				{name: "tgkill", args: []uint64{other, other, sigkill}, want: allow},
				{name: "tgkill", args: []uint64{other, thread, sigkill}, want: allow}, // not the launcher's: the kernel says ESRCH
				{name: "rt_tgsigqueueinfo", args: []uint64{launcher, thread, sigkill, 0}, want: eperm},
				{name: "rt_tgsigqueueinfo", args: []uint64{other, other, sigkill, 0}, want: allow},
				{name: "tkill", args: []uint64{thread, sigkill}, want: eperm},
				{name: "tkill", args: []uint64{launcher, sigkill}, want: eperm},
				{name: "tkill", args: []uint64{1<<32 | thread, sigkill}, want: eperm},
				{name: "tkill", args: []uint64{other, sigkill}, want: allow},
				{name: "kill", args: []uint64{thread, sigkill}, want: eperm},
				{name: "kill", args: []uint64{launcher, sigkill}, want: eperm},
				{name: "kill", args: []uint64{other, sigkill}, want: allow},
				{name: "kill", args: []uint64{0, sigkill}, want: allow},          // its own group
				{name: "kill", args: []uint64{0xffffffff, sigkill}, want: allow}, // -1: what it may signal
				{name: "rt_sigqueueinfo", args: []uint64{thread, sigkill, 0}, want: eperm},
				{name: "rt_sigqueueinfo", args: []uint64{other, sigkill, 0}, want: allow},
			})
			plain, err := Sandbox(a, Options{})
			if err != nil {
				t.Fatal(err)
			}
			run(t, plain, a, []call{
				{name: "tgkill", args: []uint64{launcher, thread, sigkill}, want: allow},
				{name: "tkill", args: []uint64{thread, sigkill}, want: allow},
				{name: "kill", args: []uint64{thread, sigkill}, want: allow},
			})
		})
	}
}

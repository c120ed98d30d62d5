package seccomp

import "golang.org/x/net/bpf"

// Set-user-ID and set-group-ID bits. A sandboxed command must not make a
// file that runs with its uid or gid for whoever runs it on the host: a root
// server's command is uid 0 without capabilities, and could otherwise copy a
// shell into a read-write mount and chmod it 4755 — a setuid-root program for
// every local user (the mount is nosuid inside the sandbox, not outside). An
// ordinary user's command would give its uid away the same way. So every call
// that sets a file's mode from an argument fails with EPERM when that mode has
// either bit: chmod, fchmod, fchmodat, fchmodat2, and the creating calls
// creat, open, openat, mknod and mknodat (their mode is an argument too).
// openat2 takes its mode in a struct the filter cannot read: it fails with
// ENOSYS, as on a kernel before 5.6, and callers fall back to openat.
// mkdir's set-group-ID bit only makes new entries inherit the group, and is
// left alone.

// SetIDBits are S_ISUID and S_ISGID.
const SetIDBits = 0o6000

// modeArg is a system call that takes a file mode, and which argument.
type modeArg struct {
	nr  uint32
	arg int
}

// modeCalls are the calls that take a mode, per architecture (numbers from
// the kernel's tables, as in arch.go; arm64 has only the *at forms).
var modeCalls = map[string]map[string]modeArg{
	"x86_64": {
		"open": {2, 2}, "creat": {85, 1}, "chmod": {90, 1}, "fchmod": {91, 1},
		"mknod": {133, 1}, "openat": {257, 3}, "mknodat": {259, 2},
		"fchmodat": {268, 2}, "fchmodat2": {452, 2},
	},
	"aarch64": {
		"mknodat": {33, 2}, "fchmod": {52, 1}, "fchmodat": {53, 2},
		"openat": {56, 3}, "fchmodat2": {452, 2},
	},
}

// openat2Nr is openat2's number on both architectures.
const openat2Nr = 437

// setIDCases adds the mode calls of a to a filter's dispatch table, each to a
// label of its own that setIDChecks emits.
func setIDCases(a *Arch) []dispatchCase {
	cases := []dispatchCase{{openat2Nr, labelENOSYS}}
	for name, m := range modeCalls[a.Name] {
		cases = append(cases, dispatchCase{m.nr, "mode-" + name})
	}
	return cases
}

// setIDChecks emits, for each mode call of a, its check: EPERM when the mode
// argument has a set-ID bit, else allow.
func setIDChecks(p *asm, a *Arch) {
	for name, m := range modeCalls[a.Name] {
		p.label("mode-" + name)
		p.load(ArgLow(m.arg))
		p.jump(bpf.JumpBitsSet, SetIDBits, labelEPERM, labelAllow)
	}
}

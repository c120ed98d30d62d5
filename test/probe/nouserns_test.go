//go:build linux

package main

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestNamespaceForkFilter runs the filters of nouserns, nsagain and
// nsagain-worker in x/net/bpf's VM on the system calls they tell apart.
func TestNamespaceForkFilter(t *testing.T) {
	const allow, errn = 0x7fff0000, 0x00050000
	const clone, unshare, clone3, getpid = 56, 272, 435, 39
	run := func(prog []bpf.Instruction, nr, flags uint32) uint32 {
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]byte, 64) // seccomp_data; the VM loads big-endian
		binary.BigEndian.PutUint32(d[0:], nr)
		binary.BigEndian.PutUint32(d[16:], flags)
		r, err := vm.Run(d)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(r)
	}
	launcher := uint32(unix.CLONE_NEWPID | unix.CLONE_NEWIPC)
	userLauncher := launcher | unix.CLONE_NEWUSER
	worker := uint32(unix.CLONE_NEWUSER | unix.CLONE_NEWPID)
	thread := uint32(unix.CLONE_VM | unix.CLONE_THREAD)
	for _, c := range []struct {
		name                 string
		flags, with, without uint32
		errno                unix.Errno
		nr, fl               uint32
		want                 uint32
	}{
		{"nouserns: a user namespace", unix.CLONE_NEWUSER, 0, 0, unix.EPERM, clone, worker, errn | uint32(unix.EPERM)},
		{"nouserns: unshare of one", unix.CLONE_NEWUSER, 0, 0, unix.EPERM, unshare, unix.CLONE_NEWUSER, errn | uint32(unix.EPERM)},
		{"nouserns: a root launcher", unix.CLONE_NEWUSER, 0, 0, unix.EPERM, clone, launcher, allow},
		{"nouserns: a thread", unix.CLONE_NEWUSER, 0, 0, unix.EPERM, clone, thread, allow},
		{"nouserns: getpid", unix.CLONE_NEWUSER, 0, 0, unix.EPERM, getpid, unix.CLONE_NEWUSER, allow},
		{"nsagain: a root launcher", worker, unix.CLONE_NEWIPC, 0, unix.EAGAIN, clone, launcher, errn | uint32(unix.EAGAIN)},
		{"nsagain: a user's launcher", worker, unix.CLONE_NEWIPC, 0, unix.EAGAIN, clone, userLauncher, errn | uint32(unix.EAGAIN)},
		{"nsagain: a JS worker", worker, unix.CLONE_NEWIPC, 0, unix.EAGAIN, clone, worker, allow},
		{"nsagain: a thread", worker, unix.CLONE_NEWIPC, 0, unix.EAGAIN, clone, thread, allow},
		{"nsagain-worker: a JS worker", worker, 0, unix.CLONE_NEWIPC, unix.EAGAIN, clone, worker, errn | uint32(unix.EAGAIN)},
		{"nsagain-worker: a launcher", worker, 0, unix.CLONE_NEWIPC, unix.EAGAIN, clone, launcher, allow},
		{"nsagain-worker: unshare of a net namespace", worker, 0, unix.CLONE_NEWIPC, unix.EAGAIN, unshare, unix.CLONE_NEWNET, allow},
	} {
		prog, err := namespaceForkFilter("amd64", c.flags, c.with, c.without, c.errno)
		if err != nil {
			t.Fatal(err)
		}
		if got := run(prog, c.nr, c.fl); got != c.want {
			t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
		}
	}
	// clone3, whose flags a filter cannot read, fails with ENOSYS, so that
	// libc falls back to clone (it went through before).
	prog, _ := namespaceForkFilter("amd64", unix.CLONE_NEWUSER, 0, 0, unix.EPERM)
	if got := run(prog, clone3, 0); got != errn|uint32(unix.ENOSYS) {
		t.Errorf("clone3: got %#x, want ENOSYS", got)
	}
}

//go:build linux

package main

import "golang.org/x/sys/unix"

// nsAgain execs argv under a seccomp filter that makes every clone or unshare
// asking for a new pid or user namespace fail with EAGAIN, as a fork does
// while a fork bomb next door holds the user's process count or a pids
// cgroup full. Threads and plain forks go on. The tests start a server so to
// check that such an error fails the call and leaves the server's mode as it
// was.
func nsAgain(argv []string) error {
	return refuseNamespaceForks("nsagain", argv, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, unix.EAGAIN)
}

//go:build linux

package main

import "golang.org/x/sys/unix"

// nsAgain execs argv under a seccomp filter that makes every clone or unshare
// that makes a launcher's namespaces (a new pid or user namespace with an IPC
// one) fail with EAGAIN, as a fork does while a fork bomb next door holds the
// user's process count or a pids cgroup full. Threads, plain forks and the JS
// workers' namespaces (user and pid, no IPC) go on. The tests start a server
// so to check that such an error fails the call and leaves the server's mode
// as it was.
func nsAgain(argv []string) error {
	return refuseNamespaceForksIf("nsagain", argv, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, unix.CLONE_NEWIPC, 0, unix.EAGAIN)
}

// nsAgainWorker is nsAgain for the JS workers' namespaces alone (a new user
// or pid namespace without an IPC one): the tests check that a server that
// cannot make them for the moment does not start its workers in a weaker
// jail.
func nsAgainWorker(argv []string) error {
	return refuseNamespaceForksIf("nsagain-worker", argv, unix.CLONE_NEWUSER|unix.CLONE_NEWPID, 0, unix.CLONE_NEWIPC, unix.EAGAIN)
}

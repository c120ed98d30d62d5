package restrict

import "golang.org/x/sys/unix"

// onMainThread: the main thread's id is the process's.
func onMainThread() bool { return unix.Gettid() == unix.Getpid() }

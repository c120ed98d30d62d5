package jspool

import "syscall"

// workerSysProcAttr: the worker is in its own process group, so terminal signals
// aimed at the server do not reach it first. It dies with the server by watching
// the life pipe (see pool), not by a parent-death signal: that would be tied to
// the thread that forked it, which exits at once.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// onMainThread reports whether the calling goroutine runs on the process's main
// thread.
func onMainThread() bool { return syscall.Gettid() == syscall.Getpid() }

//go:build !linux

package jspool

import "syscall"

// workerSysProcAttr: no parent-death signal here; the worker exits at the end of
// the life pipe (see pool).
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// onMainThread: nothing restricts a thread here, so it does not matter which.
func onMainThread() bool { return false }

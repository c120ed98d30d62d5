//go:build !linux

package supervisor

import "syscall"

// workerSysProcAttr: no parent-death signal here; the worker exits on pipe EOF.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

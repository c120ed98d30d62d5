package supervisor

import "syscall"

// workerSysProcAttr: the worker dies with the server (Pdeathsig) and is in its own
// process group, so terminal signals aimed at the server do not reach it first.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

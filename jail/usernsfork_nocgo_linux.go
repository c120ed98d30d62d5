//go:build linux && !cgo

package jail

import (
	"errors"
	"syscall"
)

// forkUserNSLauncher without cgo: Go's ForkExec, which forks for real when
// the child gets a user namespace (see usernsfork_linux.go for the cost).
func forkUserNSLauncher(exe string, argv, env []string, files []uintptr, pdeathsig syscall.Signal) (int, error) {
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: pdeathsig, Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC}
	userNSAttr(sys)
	return syscall.ForkExec(exe, argv, &syscall.ProcAttr{Env: env, Files: files, Sys: sys})
}

// vforkExec without cgo: a JS worker (the only other user) needs cgo.
func vforkExec(s *vforkSpec) (int, error) {
	return 0, errors.New("starting a JS worker needs cgo")
}

//go:build unix

package task

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hostProc is a harness running on the host (worktree kind, or the docker client) in its
// own process group, so that kill reaches what it started without setsid.
type hostProc struct {
	cmd  *exec.Cmd
	once sync.Once
}

func startHost(argv []string, dir string, env []string, s stdio) (proc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.in, s.out, s.err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	return &hostProc{cmd: cmd}, nil
}

func (h *hostProc) wait() (int, error) {
	err := h.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return -1, fmt.Errorf("waiting for %s: %w", h.cmd.Path, err)
	}
	return exitCode(h.cmd.ProcessState.Sys()), nil
}

// kill sends SIGTERM to the process group and SIGKILL after killGrace. The group id stays
// reserved while any member lives, so the late SIGKILL reaches only this tree.
func (h *hostProc) kill() {
	h.once.Do(func() {
		pgid := h.cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		time.AfterFunc(killGrace, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	})
}

// exitCode is the shell's convention: the exit status, or 128+signal.
func exitCode(sys any) int {
	ws, ok := sys.(syscall.WaitStatus)
	switch {
	case !ok:
		return -1
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// signalCode is 128 + the number of the signal named name ("SIGKILL").
func signalCode(name string) int {
	if s := unix.SignalNum(name); s != 0 {
		return 128 + int(s)
	}
	return -1
}

// fileOwner is the uid that owns fi.
func fileOwner(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

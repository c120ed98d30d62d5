package launcher

import (
	"errors"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
)

// commandIO is what the command's descriptors 0, 1 and 2 are: the launcher's own
// stdin (/dev/null) or one sent with the spec, and the spec's stdout and stderr.
type commandIO struct {
	in, out, err int  // in is -1 for /dev/null
	terminal     bool // in, out and err are a terminal, to be the controlling one
}

// stdio sorts the descriptors that came with a checked spec frame.
func stdio(m *wire.Message, fds []int) commandIO {
	if m.Stdin {
		return commandIO{in: fds[0], out: fds[1], err: fds[2], terminal: m.Terminal}
	}
	return commandIO{in: -1, out: fds[0], err: fds[1]}
}

func (c commandIO) files() []uintptr {
	in := uintptr(0) // the launcher's own: /dev/null
	if c.in >= 0 {
		in = uintptr(c.in)
	}
	return []uintptr{in, uintptr(c.out), uintptr(c.err)}
}

// sysProcAttr puts the command in a process group of its own; on a terminal, in
// a session of its own (so also a process group whose id is its pid) with the
// terminal as its controlling tty, as a login shell has, so that job control,
// Ctrl-C and /dev/tty work.
func (c commandIO) sysProcAttr() *syscall.SysProcAttr {
	if c.terminal {
		return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

func (c commandIO) close() {
	for _, fd := range []int{c.in, c.out, c.err} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// command is the launcher's command: signalled from the control socket's
// reader, reaped by the main thread.
type command struct {
	pid int

	mu   sync.Mutex
	gone bool // it has exited: once reaped, its pid (its group's id) is free
}

// signal sends the signal named (one of wire.Signals; others are ignored) to the
// command's process group, unless the command has exited: after that the group's
// id may be reused, and the launcher is killing what is left anyway.
func (c *command) signal(name string) {
	sig, ok := wire.Signals[name]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gone {
		_ = unix.Kill(-c.pid, sig)
	}
}

// wait is wait4(-1, ws, flags) that marks the command gone before it reaps it,
// so that no signal is sent to its group once its pid may be reused. It returns
// 0 when flags has WNOHANG and no child has exited.
func (c *command) wait(ws *unix.WaitStatus, flags int) (int, error) {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT|flags, nil); err != nil {
		return 0, err
	}
	pid := siginfoPid(&info)
	if pid == 0 {
		return 0, nil
	}
	if pid == c.pid {
		c.mu.Lock()
		c.gone = true
		c.mu.Unlock()
	}
	for {
		_, err := unix.Wait4(pid, ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			return pid, err
		}
	}
}

// siPidOffset is where si_pid is in a siginfo that waitid filled: after si_signo,
// si_errno and si_code, at the start of a union aligned as a pointer.
const siPidOffset = (12 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)

// siginfoPid is the si_pid of a siginfo that waitid filled (0 when WNOHANG found
// no child: the kernel zeroes it). x/sys/unix leaves the union opaque.
func siginfoPid(info *unix.Siginfo) int {
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), siPidOffset)))
}

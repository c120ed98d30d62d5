package launcher

import (
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// connectFor connects sock (the guard's copy of a command's socket) to addr
// as the command asked, without holding a thread while it waits: the
// launcher may make no more threads once its process limit is set. A
// blocking socket is made non-blocking for the connect (the flag belongs to
// the socket, which the command's thread waits on meanwhile) and waited for
// in Go's poller, within its send timeout (SO_SNDTIMEO, as the kernel's own
// connect); a unix listener whose queue is full is tried again until it has
// room, as a blocking connect waits.
func connectFor(sock int, addr []byte) unix.Errno {
	flags, err := unix.FcntlInt(uintptr(sock), unix.F_GETFL, 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	if flags&unix.O_NONBLOCK != 0 {
		return rawConnect(sock, addr) // the command's own choice: EINPROGRESS is its to wait for
	}
	if _, err := unix.FcntlInt(uintptr(sock), unix.F_SETFL, flags|unix.O_NONBLOCK); err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.FcntlInt(uintptr(sock), unix.F_SETFL, flags)
	var deadline time.Time
	if tv, err := unix.GetsockoptTimeval(sock, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err == nil && (tv.Sec != 0 || tv.Usec != 0) {
		deadline = time.Now().Add(time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond)
	}
	e := rawConnect(sock, addr)
	for backoff := time.Millisecond; e == unix.EAGAIN; backoff = min(2*backoff, 50*time.Millisecond) {
		// A unix listener's queue is full.
		if !deadline.IsZero() && time.Now().After(deadline) {
			return unix.EAGAIN // the kernel's answer at SO_SNDTIMEO
		}
		time.Sleep(backoff)
		e = rawConnect(sock, addr)
	}
	if e != unix.EINPROGRESS {
		return e
	}
	return waitConnected(sock, deadline)
}

// waitConnected waits in Go's poller until a connect in progress on sock ends,
// and returns how (SO_ERROR); ETIMEDOUT past deadline (zero: none).
func waitConnected(sock int, deadline time.Time) unix.Errno {
	dup, err := unix.FcntlInt(uintptr(sock), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	f := os.NewFile(uintptr(dup), "connecting")
	defer f.Close()
	if !deadline.IsZero() {
		f.SetWriteDeadline(deadline)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return unix.EBADF
	}
	err = rc.Write(func(fd uintptr) bool {
		ready, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, 0)
		return ready > 0
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return unix.ETIMEDOUT
	}
	if err != nil {
		return unix.EBADF
	}
	soErr, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	return unix.Errno(soErr)
}

// rawConnect is connect(2) with an address as bytes.
func rawConnect(fd int, addr []byte) unix.Errno {
	for {
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
		if e != unix.EINTR {
			return e
		}
	}
}

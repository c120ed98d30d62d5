package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// Session ports, the launcher's part (package portfwd is the supervisor's).
// A command's network namespace is the launcher's to enter (a user
// namespace's launcher holds the capabilities that setns needs there; the
// supervisor does not), so the launcher does the two things that must happen
// inside it:
//
//   - listenPorts, on the command thread once it is in the command's private
//     network and before the command starts: listeners on 127.0.0.1:P and
//     [::1]:P for each of the spec's ListenPorts (the ports of sessions that
//     the call's allowHosts names), so that the command finds them open from
//     its first instruction;
//   - servePorts, on the main thread once the command runs: it connects to
//     the supervisor's ports socket and names the call, hands the listeners
//     over (the supervisor accepts on them and relays), and, for a session
//     (OfferPorts), connects on request to a port of the command's own
//     loopback from a thread it moved into the command's network namespace,
//     and hands the connected socket back.
//
// The exchange, on one seqpacket connection (one message each line):
//
//	launcher                                   supervisor (portfwd)
//	  "AUTOBOX-PORTS <token>\n"        ───────▶  the call, by its token
//	  "L" + [listeners]                ───────▶  accepts on them, relays
//	                                   ◀───────  "D <id> <port>"
//	  "C <id>" + [connected socket]    ───────▶  relays to it
//	  or "E <id> <why>"                ───────▶  the dial fails with why
//
// The connection ends with the launcher; the command never holds any of it.
// Sockets are made by a thread that never returns to the host's namespace
// (it exits with the launcher), and connected from whichever thread: a
// socket belongs to the namespace it was made in.

// reservedPorts are the ports of a private network's own listeners.
var reservedPorts = map[int]string{wire.ProxyPort: "the proxy's", RedirectPort: "the transparent path's", 53: "the resolver's"}

// listenPorts opens the listeners of spec.ListenPorts in the calling thread's
// network namespace; private says it is the command's own (else nothing may
// be opened: the host's loopback is not the call's to take). It returns them
// (with an error, those opened before it), for servePorts: the command thread
// opens them, the main thread serves them (started hands them over).
func listenPorts(spec *policy.Command, private bool) (listeners []int, err error) {
	if len(spec.ListenPorts) == 0 {
		return nil, nil
	}
	if !private {
		return nil, fmt.Errorf("%w: session ports need the command's own network namespace; this command shares the host's network", confine.ErrUnsupported)
	}
	for _, p := range spec.ListenPorts {
		if p < 1 || p > 65535 || reservedPorts[p] != "" {
			return listeners, fmt.Errorf("session port %d: not a port the command's network may take", p)
		}
		for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
			fd, err := listenOn(family, unix.SOCK_STREAM, loopbackAddr(family, p))
			if err != nil {
				if family == unix.AF_INET6 && errors.Is(err, unix.EAFNOSUPPORT) {
					continue
				}
				return listeners, fmt.Errorf("listening on port %d for a session's port: %w", p, err)
			}
			listeners = append(listeners, fd)
		}
	}
	return listeners, nil
}

// servePorts connects to the supervisor's ports socket and serves it for the
// launcher's life (see the top of the file). pid is the command's, whose
// network namespace a session's dials go into. Failures leave the command
// running without its ports: the supervisor reports them. listeners are
// listenPorts', which it passes on and closes.
func servePorts(spec *policy.Command, pid int, listeners []int) {
	if spec == nil || spec.PortsSocket == "" {
		closeAll(listeners)
		return
	}
	c, err := net.Dial("unixpacket", spec.PortsSocket)
	if err != nil {
		closeAll(listeners)
		return
	}
	conn := c.(*net.UnixConn)
	if _, err := io.WriteString(conn, wire.PortsPreamble+spec.PortsToken+"\n"); err != nil {
		conn.Close()
		closeAll(listeners)
		return
	}
	if len(listeners) > 0 {
		_, _, _ = conn.WriteMsgUnix([]byte("L"), unix.UnixRights(listeners...), nil)
		closeAll(listeners)
	}
	if !spec.OfferPorts {
		// Nothing to answer: the connection stays open until the launcher
		// exits, which tells the supervisor that the command is gone.
		go func() { _, _ = io.Copy(io.Discard, conn) }()
		return
	}
	d := &netnsDialer{sockets: make(chan socketRequest)}
	ready := make(chan error, 1)
	go d.run(pid, ready)
	enterErr := <-ready
	go answerDials(conn, d, enterErr)
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// answerDials reads the supervisor's dial requests and answers each in its
// own goroutine (a connect may wait on a full backlog).
func answerDials(conn *net.UnixConn, d *netnsDialer, enterErr error) {
	defer conn.Close()
	buf := make([]byte, 64)
	for {
		n, _, _, _, err := conn.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			return
		}
		f := strings.Fields(string(buf[:n]))
		if len(f) != 3 || f[0] != "D" {
			continue
		}
		id := f[1]
		port, err := strconv.Atoi(f[2])
		if err != nil || port < 1 || port > 65535 {
			continue
		}
		go func() {
			if enterErr != nil {
				_, _, _ = conn.WriteMsgUnix([]byte("E "+id+" "+enterErr.Error()), nil, nil)
				return
			}
			fd, err := d.dial(port)
			if err != nil {
				_, _, _ = conn.WriteMsgUnix([]byte("E "+id+" "+err.Error()), nil, nil)
				return
			}
			_, _, _ = conn.WriteMsgUnix([]byte("C "+id), unix.UnixRights(fd), nil)
			unix.Close(fd)
		}()
	}
}

// netnsDialer makes sockets in a command's network namespace, on a thread it
// moved there for good.
type netnsDialer struct {
	sockets chan socketRequest
}

type socketRequest struct {
	family int
	reply  chan socketReply
}

type socketReply struct {
	fd  int
	err error
}

// run moves its thread into pid's network namespace (setns through a pidfd:
// pid is the launcher's child, not yet reaped, so the pidfd names it), says
// how that went on ready, and then makes sockets there. The thread stays
// locked and never leaves: it ends with the launcher.
func (d *netnsDialer) run(pid int, ready chan<- error) {
	runtime.LockOSThread()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		ready <- fmt.Errorf("the session's command is gone (pidfd_open: %w)", err)
		return
	}
	err = unix.Setns(pidfd, unix.CLONE_NEWNET)
	unix.Close(pidfd)
	if err != nil {
		ready <- fmt.Errorf("entering the session's network: setns: %w", err)
		return
	}
	ready <- nil
	for r := range d.sockets {
		fd, err := unix.Socket(r.family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		r.reply <- socketReply{fd, err}
	}
}

// portDialTimeout bounds a connect to a session's port (a server whose
// backlog is full).
const portDialTimeout = 5 * time.Second

// dial connects to port on the namespace's 127.0.0.1, then [::1] (a server
// that listens on "localhost" may have only the one), and returns the
// connected socket.
func (d *netnsDialer) dial(port int) (int, error) {
	var first error
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		reply := make(chan socketReply, 1)
		d.sockets <- socketRequest{family: family, reply: reply}
		r := <-reply
		if r.err != nil {
			if first == nil {
				first = r.err
			}
			continue
		}
		if err := connectWait(r.fd, loopbackAddr(family, port)); err != nil {
			unix.Close(r.fd)
			if first == nil {
				first = err
			}
			continue
		}
		return r.fd, nil
	}
	if errors.Is(first, unix.ECONNREFUSED) {
		return -1, fmt.Errorf("nothing listens on port %d in the session (connection refused)", port)
	}
	return -1, fmt.Errorf("connecting to port %d in the session: %w", port, first)
}

// connectWait connects the non-blocking socket fd to sa, waiting for the
// connection in Go's poller (no thread blocked), at most portDialTimeout.
// fd stays open and the caller's.
func connectWait(fd int, sa unix.Sockaddr) error {
	err := unix.Connect(fd, sa)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINPROGRESS) {
		return err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "session-port")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	_ = f.SetWriteDeadline(time.Now().Add(portDialTimeout))
	var soErr int
	werr := rc.Write(func(fd uintptr) bool {
		soErr, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
		return err != nil || soErr != 0 || connected(int(fd))
	})
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return err
	case soErr != 0:
		return unix.Errno(soErr)
	}
	return nil
}

// connected reports whether fd has a peer (its connect finished).
func connected(fd int) bool {
	_, err := unix.Getpeername(fd)
	return err == nil
}

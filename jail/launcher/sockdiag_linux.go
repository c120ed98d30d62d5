package launcher

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// sock_diag (linux/sock_diag.h, linux/unix_diag.h): the listening unix
// sockets of a network namespace, with the inode of the file each is bound to
// and its abstract name. The unix socket guard (unixguard_linux.go) asks it
// whether a socket of the call listens at a path or name.

// diagSocket is one unix socket sock_diag listed.
type diagSocket struct {
	ino    uint32 // the socket's own inode (socket:[ino] in /proc/PID/fd)
	name   string // UNIX_DIAG_NAME: the abstract name with its NUL, or the path bound
	hasVFS bool
	vfsDev uint32 // UNIX_DIAG_VFS: the bound file's device (kernel encoding) and inode
	vfsIno uint32
}

const (
	udiagShowName = 0x01
	udiagShowVFS  = 0x02
	unixDiagName  = 0
	unixDiagVFS   = 1
	tcpListen     = 10
	// sizes of struct unix_diag_req and struct unix_diag_msg
	sizeofUnixDiagReq = 24
	sizeofUnixDiagMsg = 16
)

var diagSeq atomic.Uint32

// listeningUnixSockets dumps the listening unix sockets of the network
// namespace the sock_diag socket fd was made in.
func listeningUnixSockets(fd int) ([]diagSocket, error) {
	seq := diagSeq.Add(1)
	req := make([]byte, unix.NLMSG_HDRLEN+sizeofUnixDiagReq)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], seq)
	r := req[unix.NLMSG_HDRLEN:]
	r[0] = unix.AF_UNIX                              // sdiag_family
	ne.PutUint32(r[4:], 1<<tcpListen)                // udiag_states
	ne.PutUint32(r[12:], udiagShowName|udiagShowVFS) // udiag_show
	ne.PutUint32(r[16:], ^uint32(0))                 // udiag_cookie: any
	ne.PutUint32(r[20:], ^uint32(0))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("sock_diag request: %w", err)
	}
	var out []diagSocket
	buf := make([]byte, 32<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sock_diag reply: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("sock_diag reply: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Seq != seq {
				continue // an answer to an earlier request that gave up
			}
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				return nil, errors.New("sock_diag: the kernel answered with an error")
			}
			if s, ok := parseUnixDiag(m.Data); ok {
				out = append(out, s)
			}
		}
	}
}

// parseUnixDiag reads one struct unix_diag_msg and its attributes.
func parseUnixDiag(b []byte) (diagSocket, bool) {
	var s diagSocket
	if len(b) < sizeofUnixDiagMsg {
		return s, false
	}
	ne := binary.NativeEndian
	s.ino = ne.Uint32(b[4:])
	for a := b[sizeofUnixDiagMsg:]; len(a) >= unix.SizeofRtAttr; {
		l := int(ne.Uint16(a[0:]))
		typ := ne.Uint16(a[2:])
		if l < unix.SizeofRtAttr || l > len(a) {
			break
		}
		v := a[unix.SizeofRtAttr:l]
		switch typ {
		case unixDiagName:
			s.name = string(v)
		case unixDiagVFS:
			if len(v) >= 8 {
				s.hasVFS, s.vfsIno, s.vfsDev = true, ne.Uint32(v[0:]), ne.Uint32(v[4:])
			}
		}
		a = a[min((l+3)&^3, len(a)):]
	}
	return s, true
}

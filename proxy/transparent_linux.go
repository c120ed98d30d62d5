package proxy

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/hostsock"
)

// serveTransparent takes the sockets of a command's transparent path, as the
// launcher sent them: listeners of redirected connections and DNS sockets.
func (c *Call) serveTransparent(fds []int) {
	for _, fd := range fds {
		typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
		f := os.NewFile(uintptr(fd), "transparent")
		var ln net.Listener
		var pc net.PacketConn
		var err error
		switch typ {
		case unix.SOCK_STREAM:
			ln, err = net.FileListener(f)
		case unix.SOCK_DGRAM:
			pc, err = net.FilePacketConn(f)
		}
		f.Close()
		switch {
		case err != nil:
		case ln != nil && c.hold(ln):
			c.p.wg.Add(1)
			go c.p.serveOn(ln, func(conn net.Conn) {
				// The call's and the server's connection limits, as for
				// a connection to the proxy port.
				if d := c.acquire(); d != nil {
					conn.(*net.TCPConn).SetLinger(0)
					conn.Close()
					return
				}
				defer c.release()
				c.serveRedirected(conn.(*net.TCPConn))
			})
		case pc != nil && c.hold(pc):
			c.p.wg.Add(1)
			go c.serveDNS(pc)
		}
	}
}

// serveRedirected connects a redirected connection to where the command
// asked, if the call allows it, and joins the two; a refused one is reset.
func (c *Call) serveRedirected(conn *net.TCPConn) {
	defer conn.Close()
	if !c.track(conn) {
		return
	}
	defer c.untrack(conn)
	dst, err := originalDst(conn)
	if err != nil {
		conn.SetLinger(0)
		return
	}
	addr, port := dst.Addr().Unmap(), dst.Port()
	var up net.Conn
	if p, ok := c.fake.lookup(addr); ok {
		up, err = c.dialPinned(p, port)
	} else {
		up, err = c.dial(c.ctx, addr.String(), port)
	}
	if err != nil {
		conn.SetLinger(0) // a reset: the command's connection fails at once
		return
	}
	defer up.Close()
	hostsock.Splice(conn, up)
}

// originalDst is where the command connected before the redirect.
func originalDst(conn *net.TCPConn) (netip.AddrPort, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var gerr error
	v4 := conn.LocalAddr().(*net.TCPAddr).IP.To4() != nil
	err = rc.Control(func(fd uintptr) {
		if v4 {
			// A sockaddr_in fits the 16 bytes of an ip_mreq's first field.
			m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.IPPROTO_IP, unix.SO_ORIGINAL_DST)
			if err != nil {
				gerr = err
				return
			}
			b := m.Multiaddr
			dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
			return
		}
		// IP6T_SO_ORIGINAL_DST (80): a sockaddr_in6, the first field here.
		m, err := unix.GetsockoptIPv6MTUInfo(int(fd), unix.IPPROTO_IPV6, unix.SO_ORIGINAL_DST)
		if err != nil {
			gerr = err
			return
		}
		port := (*[2]byte)(unsafe.Pointer(&m.Addr.Port))
		dst = netip.AddrPortFrom(netip.AddrFrom16(m.Addr.Addr), binary.BigEndian.Uint16(port[:]))
	})
	if err == nil {
		err = gerr
	}
	return dst, err
}

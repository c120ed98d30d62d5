package proxy

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// serveTransparent takes the sockets of a command's transparent path, as the
// launcher sent them: listeners of redirected connections (drain_linux.go)
// and DNS sockets.
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
		case ln != nil:
			c.listenRedirected(ln.(*net.TCPListener))
		case pc != nil && c.hold(pc) && c.begin():
			c.p.wg.Add(1)
			go c.serveDNS(pc)
		}
	}
}

// serveRedirected connects a redirected connection to where the command
// asked, if the call allows it, and joins the two; a refused one is reset. A
// connection the call closed before it was served here is settled: checked
// and recorded, not dialled; so is one whose dial the call's end cut short.
func (c *Call) serveRedirected(conn *net.TCPConn) {
	defer conn.Close()
	dst, err := c.originalDst(conn)
	if err != nil {
		conn.SetLinger(0)
		return
	}
	if !c.track(conn) {
		c.settle(dst)
		conn.SetLinger(0)
		return
	}
	defer c.untrack(conn)
	addr, port := dst.Addr().Unmap(), dst.Port()
	var up net.Conn
	if p, ok := c.fake.lookup(addr); ok {
		up, err = c.dialPinned(p, port)
	} else {
		up, err = c.dial(c.ctx, addr.String(), port)
	}
	if err != nil {
		var d *Denial
		if !errors.As(err, &d) && c.ctx.Err() != nil {
			c.settle(dst) // the call ended while it was dialled
		}
		if !c.ending(conn) {
			conn.SetLinger(0) // a reset: the command's connection fails at once
		}
		return
	}
	defer up.Close()
	c.tunnel(conn, nil, up)
}

// originalDst is where the command connected before the redirect.
func (c *Call) originalDst(conn *net.TCPConn) (netip.AddrPort, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var gerr error
	err = rc.Control(func(fd uintptr) { dst, gerr = c.p.originalDstFD(int(fd)) })
	if err == nil {
		err = gerr
	}
	return dst, err
}

// originalDstFD is where the command connected the redirected socket fd to,
// before the redirect.
func (p *Proxy) originalDstFD(fd int) (netip.AddrPort, error) {
	if p.originalDstHook != nil {
		return p.originalDstHook(fd)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if _, v4 := sa.(*unix.SockaddrInet4); v4 {
		// A sockaddr_in fits the 16 bytes of an ip_mreq's first field.
		m, err := unix.GetsockoptIPv6Mreq(fd, unix.IPPROTO_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			return netip.AddrPort{}, err
		}
		b := m.Multiaddr
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), nil
	}
	// IP6T_SO_ORIGINAL_DST (80): a sockaddr_in6, the first field here.
	m, err := unix.GetsockoptIPv6MTUInfo(fd, unix.IPPROTO_IPV6, unix.SO_ORIGINAL_DST)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port := (*[2]byte)(unsafe.Pointer(&m.Addr.Port))
	return netip.AddrPortFrom(netip.AddrFrom16(m.Addr.Addr), binary.BigEndian.Uint16(port[:])), nil
}

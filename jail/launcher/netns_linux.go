package launcher

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// A private network: where the launcher may make namespaces (CAP_SYS_ADMIN),
// the command thread moves into a network namespace of its own while the
// launcher waits, with only loopback up, and opens in it the listeners the
// command will reach: TCP 127.0.0.1 and [::1] port wire.ProxyPort, forwarded by the
// launcher's main thread (which stays in the host's namespace) to the
// supervisor's proxy, and UDP port 53, where a query gets REFUSED and its name
// is reported (no DNS is offered inside: names resolve at the proxy). At the
// call:
//
//   - a command with a host allowlist keeps the namespace and the listeners;
//   - a command without network keeps the namespace, empty (the listeners are
//     closed): not even another call's loopback server or a host abstract
//     socket is there;
//   - a command with the whole network goes back to the host's namespace.
type privateNet struct {
	hostNS int   // the host's network namespace, to go back to
	tcp    []int // listeners on wire.ProxyPort
	udp    []int // DNS sockets on port 53

	tp *transparentNet // transparent path (transparent_linux.go), nil without
}

// enterPrivateNet moves the calling thread into a new network namespace with
// loopback up and the listeners open.
func enterPrivateNet() (*privateNet, error) {
	host, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the host's network namespace: %w", err)
	}
	n := &privateNet{hostNS: host}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		n.close()
		return nil, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
	}
	if err := loopbackUp(); err != nil {
		return n, err
	}
	for _, l := range []struct {
		family int
		addr   unix.Sockaddr
	}{
		{unix.AF_INET, &unix.SockaddrInet4{Port: wire.ProxyPort, Addr: [4]byte{127, 0, 0, 1}}},
		{unix.AF_INET6, &unix.SockaddrInet6{Port: wire.ProxyPort, Addr: [16]byte{15: 1}}},
	} {
		fd, err := listenOn(l.family, unix.SOCK_STREAM, l.addr)
		if err == nil {
			n.tcp = append(n.tcp, fd)
		} else if l.family == unix.AF_INET {
			return n, fmt.Errorf("listening on 127.0.0.1:%d: %w", wire.ProxyPort, err)
		}
		dns := l.addr
		switch a := dns.(type) {
		case *unix.SockaddrInet4:
			dns = &unix.SockaddrInet4{Port: 53, Addr: a.Addr}
		case *unix.SockaddrInet6:
			dns = &unix.SockaddrInet6{Port: 53, Addr: a.Addr}
		}
		if fd, err := listenOn(l.family, unix.SOCK_DGRAM, dns); err == nil {
			n.udp = append(n.udp, fd)
		}
	}
	n.tp, _ = prepareTransparent() // transparent_linux.go: nil where nf_tables is missing
	return n, nil
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket for bringing up loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up loopback: %w", err)
	}
	return nil
}

func listenOn(family, typ int, addr unix.Sockaddr) (int, error) {
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if family == unix.AF_INET6 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	}
	if err := unix.Bind(fd, addr); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 128); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// closeListeners closes the listeners (a command that is not to reach the proxy).
func (n *privateNet) closeListeners() {
	for _, fd := range append(n.tcp, n.udp...) {
		unix.Close(fd)
	}
	n.tcp, n.udp = nil, nil
	n.tp.close() // transparent_linux.go
	n.tp = nil
}

func (n *privateNet) close() {
	if n == nil {
		return
	}
	n.closeListeners()
	if n.hostNS >= 0 {
		unix.Close(n.hostNS)
		n.hostNS = -1
	}
}

// isolateNet puts the calling thread in the network sb needs (see
// privateNet), from what was prepared (pn, may be nil). It returns the
// listeners to serve for a command with a host allowlist, else nil, and
// whether the thread is in a network namespace of its own with loopback
// alone (a command without network: no way out, but sockets on loopback).
func isolateNet(sb *policy.Sandbox, pn *privateNet) (*privateNet, bool, error) {
	if !wantPrivateRoot() {
		if sb.PrivateNetwork {
			return nil, false, fmt.Errorf("%w: a private network (for allowHosts) needs a network namespace, which this launcher may not make", confine.ErrUnsupported)
		}
		return nil, false, nil
	}
	if pn == nil {
		if sb.AllowNetwork && !sb.PrivateNetwork {
			return nil, false, nil // the host's network
		}
		if !sb.PrivateNetwork {
			// Not prepared (a launcher outside a pool, `autobox exec`'s): a
			// namespace with loopback alone, without the proxy's listeners.
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return nil, false, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
			}
			// Where loopback cannot be brought up (CAP_SYS_ADMIN without
			// CAP_NET_ADMIN: a container given SYS_ADMIN alone) it stays
			// down, as in a prepared launcher's namespace: no way out all
			// the same (autobox doctor says so).
			_ = loopbackUp()
			return nil, true, nil
		}
		var err error
		if pn, err = enterPrivateNet(); err != nil {
			return nil, false, err
		}
	}
	switch {
	case sb.PrivateNetwork:
		if len(pn.tcp) == 0 {
			return nil, false, errors.New("no listener for the proxy")
		}
		unix.Close(pn.hostNS)
		pn.hostNS = -1
		pn.tp, _ = pn.tp.enter() // transparent_linux.go: nil where nf_tables is missing
		return pn, false, nil
	case sb.AllowNetwork:
		defer pn.close()
		if err := unix.Setns(pn.hostNS, unix.CLONE_NEWNET); err != nil {
			return nil, false, fmt.Errorf("back to the host's network: setns: %w", err)
		}
		return nil, false, nil
	}
	pn.close()
	return nil, true, nil
}

// forwarder serves a command's private network from the launcher's main
// thread: each connection to the proxy port is accepted and handed, as a
// descriptor, to the supervisor's proxy on one seqpacket connection that names
// the call by its token (the proxy then talks to the command's socket itself);
// each DNS query is refused and its name kept.
type forwarder struct {
	socket, token string

	dialOnce sync.Once
	ctl      *net.UnixConn // to the proxy, made at the first connection
	ctlErr   error

	lookups reported // the names it was asked, for the report
}

// maxLookups bounds the names kept for the report.
const maxLookups = 32

// serve starts serving n's listeners. They go to Go's poller, so that waiting
// on them takes no thread (a thread per blocking descriptor would have to be
// made at the start of the call).
func (f *forwarder) serve(n *privateNet) {
	f.handTransparent(n) // transparent_linux.go: its listeners and DNS go to the proxy
	for _, fd := range n.tcp {
		file := os.NewFile(uintptr(fd), "proxy-listener")
		ln, err := net.FileListener(file)
		file.Close()
		if err == nil {
			go f.accept(ln)
		}
	}
	for _, fd := range n.udp {
		file := os.NewFile(uintptr(fd), "dns")
		pc, err := net.FilePacketConn(file)
		file.Close()
		if err == nil {
			go f.refuseDNS(pc)
		}
	}
	n.tcp, n.udp = nil, nil // closed above: the listeners own duplicates
}

// accept hands over each connection; it ends with the launcher.
func (f *forwarder) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if file, err := c.(*net.TCPConn).File(); err == nil {
			f.handOver(int(file.Fd()))
			file.Close()
		}
		c.Close()
	}
}

func (f *forwarder) handOver(fd int) {
	if f.control() == nil {
		_, _, _ = f.ctl.WriteMsgUnix([]byte{0}, unix.UnixRights(fd), nil)
	}
}

// control connects to the proxy, once.
func (f *forwarder) control() error {
	f.dialOnce.Do(func() {
		c, err := net.Dial("unixpacket", f.socket)
		if err != nil {
			f.ctlErr = err
			return
		}
		f.ctl = c.(*net.UnixConn)
		_, f.ctlErr = io.WriteString(f.ctl, policy.ProxyPreamble+f.token+"\n")
	})
	return f.ctlErr
}

// refuseDNS answers every query on pc with REFUSED and keeps the name asked.
func (f *forwarder) refuseDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		reply, name, ok := refusedReply(buf[:n])
		if !ok {
			continue
		}
		f.keep(name)
		_, _ = pc.WriteTo(reply, from)
	}
}

func (f *forwarder) keep(name string) { f.lookups.add(name) }

// names returns the names looked up so far.
func (f *forwarder) names() []string {
	if f == nil {
		return nil
	}
	return f.lookups.list()
}

// refusedReply builds a REFUSED answer to a DNS query (RFC 1035 4.1), and
// returns the name asked for.
func refusedReply(q []byte) ([]byte, string, bool) {
	if len(q) < 12 || q[2]&0x80 != 0 { // too short, or a response
		return nil, "", false
	}
	qd := int(q[4])<<8 | int(q[5])
	var labels []string
	i := 12
	if qd >= 1 {
		for i < len(q) && q[i] != 0 {
			l := int(q[i])
			if l&0xc0 != 0 || i+1+l > len(q) {
				return nil, "", false
			}
			labels = append(labels, strings.ToLower(string(q[i+1:i+1+l])))
			i += 1 + l
		}
		i += 1 + 4 // the root label, QTYPE, QCLASS
		if i > len(q) {
			return nil, "", false
		}
	}
	r := make([]byte, i)
	copy(r, q[:i])
	r[2] = 0x80 | q[2]&0x79 // QR, the opcode and RD kept
	r[3] = 5                // REFUSED
	r[4], r[5] = 0, byte(min(qd, 1))
	for j := 6; j < 12; j++ {
		r[j] = 0
	}
	return r, strings.Join(labels, "."), true
}

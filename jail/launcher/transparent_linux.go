package launcher

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
	"golang.org/x/sys/unix"
)

// The transparent path of a private network (see privateNet): for programs
// that do not read the proxy variables. In the command's network namespace,
// with nf_tables (CAP_NET_ADMIN there, the launcher's):
//
//   - every IPv4 and IPv6 destination is routed to loopback (a default route
//     on lo), so that a connect to any address makes a packet the rules see
//     instead of failing with "network unreachable";
//   - TCP to any address outside loopback is redirected (nat output) to the
//     launcher's listener on RedirectPort, and UDP to port 53 anywhere to the
//     resolver's port 53: the kernel keeps the original destination, which the
//     proxy reads back (SO_ORIGINAL_DST);
//   - everything else that would leave loopback is rejected (filter output,
//     after nat: a redirected packet's destination is loopback by then).
//
// The listeners and the DNS sockets are handed to the proxy, which answers
// names from the call's allowHosts with addresses of a range of its own and
// serves the redirected connections itself (package proxy, transparent.go).
// Loopback inside stays the namespace's own: a command's own servers on
// 127.0.0.1 work as before, and the proxy port (wire.ProxyPort) is reached as
// before by the tools that read the proxy variables.

// RedirectPort (wire.RedirectPort) is the port, on the namespace's loopback,
// where TCP connections to addresses outside it arrive.
const RedirectPort = wire.RedirectPort

// transparentNet is the part of a private network that serves the transparent
// path: the redirect listeners (127.0.0.1 and [::1]).
type transparentNet struct {
	tcp []int
}

// prepareTransparent installs the rules in the calling thread's network
// namespace and opens the redirect listeners: the slow part (a commit of
// nf_tables takes milliseconds), done while a pooled launcher waits. Until
// enter adds the routes, the rules see no packet: a command without network
// gets the namespace as it was, a connect out failing with "network
// unreachable". On error the proxy-variable path stays; the namespace may
// hold the rules, inert.
func prepareTransparent() (*transparentNet, error) {
	if err := redirectRules(); err != nil {
		return nil, fmt.Errorf("nf_tables rules: %w", err)
	}
	t := &transparentNet{}
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		fd, err := listenOn(family, unix.SOCK_STREAM, loopbackAddr(family, RedirectPort))
		if err != nil {
			t.close()
			return nil, fmt.Errorf("listening on port %d for redirected connections: %w", RedirectPort, err)
		}
		t.tcp = append(t.tcp, fd)
	}
	return t, nil
}

// enter routes every destination to loopback, where the rules take it: t
// then serves the command. On error t is closed, and the IPv4 route may be
// there, leading a connect out to a closed port. t may be nil.
func (t *transparentNet) enter() (*transparentNet, error) {
	if t == nil {
		return nil, nil
	}
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		if err := routeToLoopback(family); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// enterTransparent is prepareTransparent and enter at once (the probe).
func enterTransparent() (*transparentNet, error) {
	t, err := prepareTransparent()
	if err != nil {
		return nil, err
	}
	return t.enter()
}

// loopbackAddr is 127.0.0.1:port or [::1]:port.
func loopbackAddr(family, port int) unix.Sockaddr {
	if family == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: port, Addr: [16]byte{15: 1}}
	}
	return &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
}

func (t *transparentNet) close() {
	if t == nil {
		return
	}
	for _, fd := range t.tcp {
		unix.Close(fd)
	}
	t.tcp = nil
}

// routeToLoopback adds a default route of family through lo (ifindex 1 in a
// new namespace), as `ip route add default dev lo` does.
func routeToLoopback(family int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket for routes: %w", err)
	}
	defer unix.Close(fd)
	scope := uint8(unix.RT_SCOPE_LINK)
	if family == unix.AF_INET6 {
		scope = unix.RT_SCOPE_UNIVERSE
	}
	rt := unix.RtMsg{Family: uint8(family), Table: unix.RT_TABLE_MAIN, Protocol: unix.RTPROT_BOOT, Scope: scope, Type: unix.RTN_UNICAST}
	body := append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&rt)), unix.SizeofRtMsg)...)
	body = rtAttr(body, unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, 1))
	if family == unix.AF_INET {
		// Loopback's address is of host scope, narrower than the route's:
		// without a preferred source the kernel would pick 0.0.0.0.
		body = rtAttr(body, unix.RTA_PREFSRC, []byte{127, 0, 0, 1})
	}
	hdr := unix.NlMsghdr{
		Len:   uint32(unix.SizeofNlMsghdr + len(body)),
		Type:  unix.RTM_NEWROUTE,
		Flags: unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL,
		Seq:   1,
	}
	msg := append(unsafe.Slice((*byte)(unsafe.Pointer(&hdr)), unix.SizeofNlMsghdr), body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("adding a default route through lo: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("adding a default route through lo: %w", err)
	}
	// The answer is an NLMSG_ERROR whose error is 0 for success.
	if n < unix.SizeofNlMsghdr+4 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR {
		return fmt.Errorf("adding a default route through lo: unreadable answer")
	}
	if e := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); e != 0 {
		return fmt.Errorf("adding a default route through lo: %w", unix.Errno(-e))
	}
	return nil
}

// rtAttr appends a route attribute (its length and type, then data, 4-byte
// aligned; data here is always a multiple of 4).
func rtAttr(b []byte, typ uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(unix.SizeofRtAttr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	return append(b, data...)
}

// redirectRules installs, for IPv4 and IPv6, the redirect of TCP and DNS and
// the rejection of the rest (see the comment at the top). One batch: all or
// nothing.
func redirectRules() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		family     nftables.TableFamily
		daddr      uint32 // offset of the destination address in the header
		loopback   []byte // the loopback prefix, masked
		mask       []byte
		rejectCode uint8
	}{
		{nftables.TableFamilyIPv4, 16, []byte{127, 0, 0, 0}, []byte{255, 0, 0, 0}, 13}, // ICMP_PKT_FILTERED
		{nftables.TableFamilyIPv6, 24, append(make([]byte, 15), 1), ones(16), 1},       // ICMPV6_ADM_PROHIBITED
	} {
		t := c.AddTable(&nftables.Table{Family: f.family, Name: "autobox"})
		nat := c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
		filter := c.AddChain(&nftables.Chain{Name: "reject", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter})
		notLoopback := []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: f.daddr, Len: uint32(len(f.mask))},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(f.mask)), Mask: f.mask, Xor: make([]byte, len(f.mask))},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: f.loopback},
		}
		proto := func(p byte) []expr.Any {
			return []expr.Any{
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}},
			}
		}
		redirect := func(port uint16) []expr.Any {
			return []expr.Any{
				&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
				&expr.Redir{RegisterProtoMin: 1},
			}
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: concat(notLoopback, proto(unix.IPPROTO_TCP), redirect(RedirectPort))})
		dns := []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(53)},
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: concat(notLoopback, proto(unix.IPPROTO_UDP), dns, redirect(53))})
		c.AddRule(&nftables.Rule{Table: t, Chain: filter, Exprs: concat(notLoopback,
			[]expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: f.rejectCode}})})
	}
	return c.Flush()
}

func ones(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

func concat(parts ...[]expr.Any) []expr.Any {
	var all []expr.Any
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// handTransparent gives the proxy what serves n's transparent path, in one
// message "T" on the launcher's connection: the redirect listeners and the DNS
// sockets, which the proxy then serves itself (no hop through the launcher).
// Without a transparent path, or if the proxy cannot be told, the launcher
// keeps the DNS sockets and refuses every query (see forwarder), and the
// redirect listeners are closed: a connection out is refused at once.
func (f *forwarder) handTransparent(n *privateNet) {
	if n.tp == nil {
		return
	}
	fds := append(append([]int(nil), n.tp.tcp...), n.udp...)
	if len(n.tp.tcp) == 0 || f.control() != nil {
		n.tp.close()
		return
	}
	if _, _, err := f.ctl.WriteMsgUnix([]byte(policy.ProxyTransparent), unix.UnixRights(fds...), nil); err != nil {
		n.tp.close()
		return
	}
	// The proxy answers once it serves them, so that the command's exit,
	// reported after this, never reaches the proxy before the listeners do
	// (a connection the command left queued is then recorded). At most 10 s.
	f.ctl.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = f.ctl.Read(make([]byte, 1))
	f.ctl.SetReadDeadline(time.Time{})
	for _, fd := range fds {
		unix.Close(fd)
	}
	n.tp.tcp, n.udp = nil, nil
}

// probeTransparentInside sets up what a launcher sets up for the transparent
// path, in this process's (new) network namespace, and says what failed.
func probeTransparentInside() int {
	runtime.LockOSThread()
	if err := loopbackUp(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t, err := enterTransparent()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	t.close()
	return 0
}

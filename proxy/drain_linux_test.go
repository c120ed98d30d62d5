package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/testnet"
)

// The transparent path's listeners at the end of a call (drain_linux.go),
// without nf_tables: a loopback listener stands for the launcher's redirect
// listener, and the original destination of each connection is made up from
// its client's address (originalDstHook): from 127.0.0.3, the refused
// 203.0.113.7 on the client's port (a denial of its own per connection); from
// 127.0.0.2, the listed server allowed.

const refusedFrom, allowedFrom = "127.0.0.3", "127.0.0.2"

// redirects makes the proxy's redirected connections go, for f's calls, to
// 203.0.113.7:PORT from refusedFrom and to allowed (a listed host:port) from
// allowedFrom.
func (f *fixture) redirects(allowed string) {
	to := netip.MustParseAddrPort(allowed)
	f.p.originalDstHook = func(fd int) (netip.AddrPort, error) {
		sa, err := unix.Getpeername(fd)
		if err != nil {
			return netip.AddrPort{}, err
		}
		peer := sa.(*unix.SockaddrInet4)
		if netip.AddrFrom4(peer.Addr).String() == allowedFrom {
			return to, nil
		}
		return netip.AddrPortFrom(netip.MustParseAddr("203.0.113.7"), uint16(peer.Port)), nil
	}
}

// listener gives c a listener of redirected connections, as the launcher
// does, and returns its address; serving false: it is only queued on (the
// accept loop is not started), for Close to drain.
func (f *fixture) listener(c *Call, serving bool) string {
	f.t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	addr := ln.Addr().String()
	if !serving {
		done := make(chan struct{})
		close(done)
		c.mu.Lock()
		c.redirects = append(c.redirects, &redirectListener{ln: ln.(*net.TCPListener), done: done})
		c.mu.Unlock()
		return addr
	}
	file, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		f.t.Fatal(err)
	}
	fd, err := unix.Dup(int(file.Fd()))
	file.Close()
	if err != nil {
		f.t.Fatal(err)
	}
	c.serveTransparent([]int{fd})
	return addr
}

// connectAndExit connects to addr from the address from and closes at once,
// as a command that exits right after connect(2): the handshake is done (the
// connection is queued), what the proxy makes of it is not known yet. It
// returns the client's port.
func connectAndExit(t *testing.T, from, addr string) int {
	t.Helper()
	// Blocking connect(2), as a plain command makes it: it returns once the
	// handshake is done, whatever the proxy does next (Go's non-blocking
	// Dial could see the reset of a fast refusal instead).
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: netip.MustParseAddr(from).As4()}); err != nil {
		t.Fatal(err)
	}
	// The port is the bind's: a reset connection gives its port back.
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	to := netip.MustParseAddrPort(addr)
	// ECONNRESET: the handshake was done and the proxy's refusal (a reset)
	// came before this thread, on a loaded machine, got back to its connect.
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())}); err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Fatal(err)
	}
	return sa.(*unix.SockaddrInet4).Port
}

// connectEach connects to addr and exits, refused times from refusedFrom
// and then allowed times from allowedFrom; it returns the refused ones' ports.
func connectEach(t *testing.T, addr string, refused, allowed int) []int {
	t.Helper()
	var ports []int
	for range refused {
		ports = append(ports, connectAndExit(t, refusedFrom, addr))
	}
	for range allowed {
		connectAndExit(t, allowedFrom, addr)
	}
	return ports
}

// running is how many handlers of c are counted (begin).
func (c *Call) running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.busy
}

// checkRecorded fails unless rec denies 203.0.113.7 on each of ports (not in
// allowHosts) and counts allowed reached n times, and nothing else.
func checkRecorded(t *testing.T, what string, rec Record, ports []int, allowed string, n int) {
	t.Helper()
	denied := map[int]string{}
	for _, d := range rec.Denied {
		if d.Host != "203.0.113.7" {
			t.Errorf("%s: unexpected denial %+v", what, d)
		}
		denied[d.Port] = d.Reason
	}
	for _, p := range ports {
		if denied[p] != "not in allowHosts" {
			t.Errorf("%s: the connection to 203.0.113.7:%d is not recorded as refused (%+v)", what, p, rec)
		}
	}
	if len(rec.Denied) != len(ports) {
		t.Errorf("%s: %d denials, want %d: %+v", what, len(rec.Denied), len(ports), rec)
	}
	got := 0
	for _, a := range rec.Allowed {
		if net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) == allowed {
			got = a.Count
		}
	}
	if got != n {
		t.Errorf("%s: %s recorded as reached %d times, want %d (%+v)", what, allowed, got, n, rec)
	}
}

// TestRedirectedRecordedAtClose: a command that connects and exits at once,
// its call closed right after, still finds every refused connection in the
// result, whether the proxy had accepted it (a handler, waited for) or it was
// still queued (drained at Close); the positive control, a listed host, is
// recorded as reached and never as refused. Many calls, for either way to
// happen; the listener and every handler are gone when Close returns.
func TestRedirectedRecordedAtClose(t *testing.T) {
	f := newFixture(t)
	srv := testnet.TCP(t).Addr().String()
	f.redirects(srv)
	for round := range 50 {
		c := f.call(srv)
		addr := f.listener(c, true)
		ports := connectEach(t, addr, 3, 1)
		rec := c.Close()
		checkRecorded(t, "round "+strconv.Itoa(round), rec, ports, srv, 1)
		if n := c.running(); n != 0 {
			t.Errorf("round %d: %d handlers still running after Close", round, n)
		}
		if conn, err := net.Dial("tcp4", addr); err == nil {
			conn.Close()
			t.Errorf("round %d: the listener is still open after Close", round)
		}
	}
}

// TestDrainQueued: connections queued on a listener no one accepts from are
// each recorded at Close (refused, and the listed one reached), and reset; at
// most maxDrained of them, the rest reset with one denial saying so.
func TestDrainQueued(t *testing.T) {
	f := newFixture(t)
	srv := testnet.TCP(t).Addr().String()
	f.redirects(srv)
	c := f.call(srv)
	addr := f.listener(c, false)
	ports := connectEach(t, addr, 10, 2)
	checkRecorded(t, "queued", c.Close(), ports, srv, 2)
	if conn, err := net.Dial("tcp4", addr); err == nil {
		conn.Close()
		t.Error("the listener is still open after Close")
	}

	// The bound: a command that is still connecting cannot keep Close
	// draining.
	defer func(n int) { maxDrained = n }(maxDrained)
	maxDrained = 4
	c = f.call(srv)
	connectEach(t, f.listener(c, false), 10, 0)
	rec := c.Close()
	if len(rec.Denied) != 5 || !hasDenial(rec, "connections still arriving as the call ended") {
		t.Errorf("past maxDrained: want 4 denials and one for the rest, got %+v", rec)
	}
}

// TestCloseEndsHandlers: handlers that would wait forever, a redirected
// connection tunnelled to a server that never answers or closes, for a client
// that never sends, and a client of the proxy port that sends nothing, end
// with the call: Close returns with none running, and the upstream connection
// is closed (the server reads its end).
func TestCloseEndsHandlers(t *testing.T) {
	f := newFixture(t)
	up, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if conn, err := up.Accept(); err == nil {
			accepted <- conn
		}
	}()
	f.redirects(up.Addr().String())
	c := f.call(up.Addr().String())
	addr := f.listener(c, true)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(allowedFrom)}}
	client, err := d.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted // the handler dialled: it tunnels now
	defer server.Close()
	f.conn(c.Token()) // a proxy-port client that never sends
	waitOpen(t, c, 2)
	c.Close()
	if n := c.running(); n != 0 {
		t.Fatalf("%d handlers still running after Close", n)
	}
	// Both ends the handler held are closed: the server reads to its end,
	// and so does the command.
	if _, err := io.ReadAll(server); err != nil {
		t.Errorf("the upstream connection: %v", err)
	}
	if _, err := io.ReadAll(client); err != nil && !errors.Is(err, unix.ECONNRESET) {
		t.Errorf("the command's connection: %v", err)
	}
}

// TestCallEndsMidLookup: a call that ends while the proxy looks up a listed
// name for it (Close waits for that handler) records no denial of the name:
// it did not fail to resolve.
func TestCallEndsMidLookup(t *testing.T) {
	f := newFixture(t)
	c := f.call("slow.test")
	started := make(chan struct{}, 1)
	f.p.resolver.lookupHook = func(string) ([]netip.Addr, error) {
		started <- struct{}{}
		<-c.ctx.Done()
		return nil, c.ctx.Err()
	}
	conn := f.conn(c.Token())
	fmt.Fprintf(conn, "CONNECT slow.test:443 HTTP/1.1\r\nHost: slow.test:443\r\n\r\n")
	<-started
	if rec := c.Close(); len(rec.Denied) != 0 || len(rec.Allowed) != 0 {
		t.Errorf("a call ended mid-lookup: %+v", rec)
	}
	if n := c.running(); n != 0 {
		t.Errorf("%d handlers still running after Close", n)
	}
}

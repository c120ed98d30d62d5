package proxy

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// The transparent path's listeners, and what they hold when the call ends.
//
// A command that connects to an address it may not reach and exits at once
// leaves its connection in the listener's queue: the kernel completes the
// handshake (so the command saw "connected") before the proxy accepts it. If
// the call then closed the listener, the connection would be reset unseen and
// the call's result would not say that the host was refused: the model would
// not learn what to ask for. So Close first stops the listener's accept loop,
// then drains the queue itself with non-blocking accepts: each connection's
// original destination is read as a handler reads it, settled (checked and
// recorded as the handler would have recorded it, without a lookup, a question
// to the user or a dial: the command is gone) and reset. A handler already
// running is counted (begin) and Close waits for it.
//
// The listeners reach the proxy in the launcher's transparent-path message,
// sent after the command has started; the proxy answers it once it holds them
// (handle), and the launcher waits for that answer before it can report the
// command's exit. So the Close that follows the exit finds every listener.
//
// A command still running when Close comes (Close from an error path, or the
// server stopping) could keep the queue full: the drain takes at most
// maxDrained connections of a listener, records that it stopped, and closes
// the listener, which resets the rest.

// maxDrained bounds the connections Close takes from one listener's queue (a
// variable for tests). The launcher's listeners queue at most 128, and the
// kernel at most net.core.somaxconn.
var maxDrained = 4096

// redirectListener is one of the call's listeners of redirected connections.
type redirectListener struct {
	ln   *net.TCPListener
	done chan struct{} // closed when its accept loop has returned
}

// listenRedirected serves the connections redirected to ln until the call
// closes; ln is closed with it (at once if it already has).
func (c *Call) listenRedirected(ln *net.TCPListener) {
	rl := &redirectListener{ln: ln, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		ln.Close()
		return
	}
	c.redirects = append(c.redirects, rl)
	c.mu.Unlock()
	c.p.wg.Add(1)
	go c.acceptRedirected(rl)
}

// acceptRedirected hands each connection to a handler, counted for Close,
// until Close stops it (or the listener fails).
func (c *Call) acceptRedirected(rl *redirectListener) {
	defer c.p.wg.Done()
	defer close(rl.done)
	for {
		conn, err := rl.ln.AcceptTCP()
		if err != nil {
			return
		}
		if !c.begin() {
			// The call is closing: the handler does what the drain does.
			c.serveRedirected(conn)
			continue
		}
		c.p.wg.Add(1)
		go func() {
			defer c.p.wg.Done()
			defer c.end()
			// The call's and the server's connection limits, as for a
			// connection to the proxy port.
			if d := c.acquire(); d != nil {
				conn.SetLinger(0)
				conn.Close()
				return
			}
			defer c.release()
			c.serveRedirected(conn)
		}()
	}
}

// drainRedirects stops the accept loops of the listeners rls, settles the
// connections still queued on them and closes them. The call is closed.
func (c *Call) drainRedirects(rls []*redirectListener) {
	for _, rl := range rls {
		// A deadline passed: Accept returns at once, from now on, and the
		// loop with it.
		rl.ln.SetDeadline(time.Unix(1, 0))
	}
	for _, rl := range rls {
		<-rl.done
		c.drain(rl.ln)
		rl.ln.Close()
	}
}

// drain settles the connections queued on ln, at most maxDrained. The accept
// loop has returned: nothing else accepts on ln.
func (c *Call) drain(ln *net.TCPListener) {
	rc, err := ln.SyscallConn()
	if err != nil {
		return
	}
	for n := 0; ; n++ {
		if n == maxDrained {
			c.rec.deny(Denial{Host: "*", Reason: "connections still arriving as the call ended: the rest were reset unchecked"})
			return
		}
		fd := -1
		var aerr error
		// The listener is non-blocking (Go's poller): accept4 returns EAGAIN
		// once the queue is empty.
		if err := rc.Control(func(lfd uintptr) {
			fd, _, aerr = unix.Accept4(int(lfd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
		}); err != nil {
			return
		}
		if errors.Is(aerr, unix.EINTR) || errors.Is(aerr, unix.ECONNABORTED) {
			continue
		}
		if aerr != nil {
			return // empty (EAGAIN), or out of descriptors: closing resets the rest
		}
		if dst, err := c.p.originalDstFD(fd); err == nil {
			c.settle(dst)
		}
		unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
		unix.Close(fd)
	}
}

// settle records a redirected connection to dst that the call closed before
// it was served: the denial its handler would have recorded, or, for one the
// list allows, the host as reached (the command saw it connect). Nothing is
// looked up, asked or dialled: the call is over.
func (c *Call) settle(dst netip.AddrPort) {
	addr, port := dst.Addr().Unmap(), dst.Port()
	host, addrs := addr.String(), []netip.Addr(nil)
	if p, ok := c.fake.lookup(addr); ok {
		host, addrs = p.name, p.addrs
	}
	if !c.allow.AllowsTarget(host, port) && !c.asking.grantedTarget(host, port) {
		d := c.notListed(host, port)
		if c.asking.ask != nil {
			d.Reason += "; the user was not asked: the command had ended"
		}
		c.rec.deny(*d)
		return
	}
	if addrs != nil {
		if _, d := c.usable(host, port, addrs); d != nil {
			d.Listed = true
			c.rec.deny(*d)
			return
		}
	}
	c.rec.allow(host, int(port))
}

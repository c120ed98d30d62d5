package portfwd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/autobox-dev/autobox/internal/hostsock"
)

// serveListeners accepts on the listeners a call's launcher handed over (its
// command's loopback) and relays each connection along the route of the
// listener's port. A port without a route gets its connections closed.
func (e *Endpoint) serveListeners(fds []int) {
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "session-port-listener")
		ln, err := net.FileListener(f)
		f.Close()
		if err != nil {
			continue
		}
		if !e.hold(ln) {
			return
		}
		port := 0
		if a, ok := ln.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
		r, ok := e.Routed(uint16(port))
		go e.acceptOn(ln, func(c net.Conn) {
			if !ok {
				c.Close()
				return
			}
			e.relay(c, r.Name, r.dial)
		})
	}
}

// hold keeps ln, to close with the endpoint; false (ln closed) once it is.
func (e *Endpoint) hold(ln net.Listener) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		ln.Close()
		return false
	}
	e.listeners = append(e.listeners, ln)
	return true
}

// Expose listens on the host's 127.0.0.1, on a port the kernel picks, and
// relays each connection to port of the endpoint's command (a session's),
// until the endpoint closes. It returns the host's port.
func (e *Endpoint) Expose(port uint16) (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("expose: listening on the host's loopback: %w", err)
	}
	if !e.hold(ln) {
		return 0, ErrEnded
	}
	name := "expose " + strconv.Itoa(int(port))
	go e.acceptOn(ln, func(c net.Conn) {
		e.relay(c, name, func(ctx context.Context) (net.Conn, error) { return e.Dial(ctx, port) })
	})
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// acceptOn serves ln until it is closed. It accepts a connection only while
// the endpoint relays fewer than maxRelayed: one more waits in the kernel's
// listen queue, as at any busy server, until a relayed connection ends. (It
// was accepted and closed at once: a burst of 256 clients at a slow dev server
// saw two in three of their connections reset.)
func (e *Endpoint) acceptOn(ln net.Listener, serve func(net.Conn)) {
	for {
		select {
		case e.relaying <- struct{}{}:
		case <-e.gone:
			return
		}
		c, err := ln.Accept()
		if err != nil {
			<-e.relaying
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !e.track(c) {
			<-e.relaying
			c.Close() // closed
			continue
		}
		go func() {
			defer func() { <-e.relaying }()
			serve(c)
		}()
	}
}

// track counts c as the endpoint's; false past maxConns or once closed.
func (e *Endpoint) track(c net.Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || len(e.conns) >= maxConns {
		return false
	}
	e.conns[c] = true
	return true
}

func (e *Endpoint) untrack(c net.Conn) {
	e.mu.Lock()
	delete(e.conns, c)
	e.mu.Unlock()
}

// relay joins client, a tracked connection, to what dial connects to. A dial
// that fails closes client and is noted under name.
func (e *Endpoint) relay(client net.Conn, name string, dial func(context.Context) (net.Conn, error)) {
	defer e.untrack(client)
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the endpoint's end cancels a dial in progress
		select {
		case <-e.gone:
		case <-ctx.Done():
		}
		cancel()
	}()
	up, err := dial(ctx)
	if err != nil {
		cancel()
		e.note(name + ": " + err.Error())
		return
	}
	if !e.track(up) {
		cancel()
		up.Close()
		return
	}
	defer e.untrack(up)
	defer up.Close()
	hostsock.Splice(client, up)
	cancel()
}

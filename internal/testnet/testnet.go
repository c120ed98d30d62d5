// Package testnet has the loopback listeners the sandbox tests connect to: a
// connection that succeeds proves the network was allowed, one refused by the sandbox
// that it was denied.
package testnet

import (
	"io"
	"net"
	"testing"
)

// Serve accepts and closes connections on ln until the test ends.
func Serve(t testing.TB, ln net.Listener) { serve(t, ln, func(c net.Conn) { c.Close() }) }

// serve accepts connections on ln and hands each to handle until the test ends.
func serve(t testing.TB, ln net.Listener, handle func(net.Conn)) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			handle(c)
		}
	}()
}

// TCP listens on 127.0.0.1 and serves until the test ends.
func TCP(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, ln)
	return ln
}

// Hold listens on 127.0.0.1 and holds each connection open until its client
// closes its end (a tunnel to it lives as long as its client wants), until
// the test ends. It returns the listener's host:port.
func Hold(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, ln, func(c net.Conn) { go func() { io.Copy(io.Discard, c); c.Close() }() })
	return ln.Addr().String()
}

// Package testnet has the loopback listeners the sandbox tests connect to: a
// connection that succeeds proves the network was allowed, one refused by the sandbox
// that it was denied.
package testnet

import (
	"net"
	"testing"
)

// Serve accepts and closes connections on ln until the test ends.
func Serve(t testing.TB, ln net.Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
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

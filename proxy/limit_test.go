package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testnet"
)

// tunnelTo opens a CONNECT tunnel to hp through the proxy for c and reports
// whether it was established (false: the proxy closed the connection).
func (f *fixture) tunnelTo(c *Call, hp string) (net.Conn, bool) {
	conn := f.conn(c.Token())
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hp, hp)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	conn.SetReadDeadline(time.Time{})
	return conn, err == nil && resp.StatusCode == 200
}

// waitOpen waits until c holds n connections (a closed connection is given
// back when the proxy's side sees it end).
func waitOpen(t *testing.T, c *Call, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.Open() != n; {
		if time.Now().After(deadline) {
			t.Fatalf("call holds %d connections, want %d", c.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasDenial(rec Record, reason string) bool {
	for _, d := range rec.Denied {
		if strings.Contains(d.Reason, reason) {
			return true
		}
	}
	return false
}

// TestConnectionLimits (issue 20 item 9): a call holds at most perCall
// connections and all calls together total; one past either is closed at
// once and recorded, while what is held goes on and other calls still
// connect up to what is left.
func TestConnectionLimits(t *testing.T) {
	f := newFixture(t)
	f.p.perCall, f.p.total = 4, 6
	hp := testnet.Hold(t)
	a, b := f.call(hp), f.call(hp)
	var held []net.Conn
	for i := range 4 {
		conn, ok := f.tunnelTo(a, hp)
		if !ok {
			t.Fatalf("tunnel %d of call a refused", i)
		}
		held = append(held, conn)
	}
	if _, ok := f.tunnelTo(a, hp); ok {
		t.Error("a 5th tunnel of call a was established")
	}
	if !hasDenial(a.Record(), "this call may hold 4") {
		t.Errorf("call a's record: %+v", a.Record())
	}
	// Another call is not starved: it gets what the server has left.
	for i := range 2 {
		if _, ok := f.tunnelTo(b, hp); !ok {
			t.Fatalf("tunnel %d of call b refused", i)
		}
	}
	if _, ok := f.tunnelTo(b, hp); ok {
		t.Error("a tunnel past the server's total was established")
	}
	if !hasDenial(b.Record(), "the server's 6 for all calls are in use") {
		t.Errorf("call b's record: %+v", b.Record())
	}
	// A connection closed is given back.
	held[0].Close()
	waitOpen(t, a, 3)
	if _, ok := f.tunnelTo(b, hp); !ok {
		t.Error("call b could not use the connection call a gave back")
	}
	// Each established tunnel still works.
	if _, err := held[1].Write([]byte("x")); err != nil {
		t.Errorf("a held tunnel: %v", err)
	}
}

// TestFetchConnectionLimits: execute_js's fetch dialer counts the same way,
// its connections are given back when closed, and all close with the call.
func TestFetchConnectionLimits(t *testing.T) {
	f := newFixture(t)
	f.p.perCall, f.p.total = 3, 100
	hp := testnet.Hold(t)
	c := f.call(hp)
	var conns []net.Conn
	for i := range 3 {
		conn, err := c.DialContext(context.Background(), "tcp", hp)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, conn)
	}
	_, err := c.DialContext(context.Background(), "tcp", hp)
	var d *Denial
	if err == nil || !strings.Contains(err.Error(), "this call may hold 3") {
		t.Errorf("4th dial: %v (%T, %v)", err, err, d)
	}
	conns[0].Close()
	conns[0].Close() // given back once
	if c.Open() != 2 {
		t.Errorf("after a close the call holds %d", c.Open())
	}
	if _, err := c.DialContext(context.Background(), "tcp", hp); err != nil {
		t.Errorf("dial after a close: %v", err)
	}
	c.Close()
	if c.Open() != 0 || f.p.held.open.Load() != 0 {
		t.Errorf("after the call's end: call %d, server %d", c.Open(), f.p.held.open.Load())
	}
	if _, err := conns[1].Write([]byte("x")); err == nil {
		t.Error("a connection outlived its call")
	}
}

func TestConnLimitsFromNofile(t *testing.T) {
	for _, c := range []struct {
		nofile         uint64
		perCall, total int64
	}{
		{0, 128, 1024}, {1 << 20, 128, 1024}, {20000, 128, 1024}, {4096, 128, 512}, {1024, 32, 128}, {256, 8, 32}, {64, 4, 16},
	} {
		if p, tot := connLimits(c.nofile); p != c.perCall || tot != c.total {
			t.Errorf("nofile %d: %d per call, %d in all; want %d, %d", c.nofile, p, tot, c.perCall, c.total)
		}
	}
}

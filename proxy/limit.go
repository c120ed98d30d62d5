package proxy

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// Connection limits. Each connection a call has open through the proxy holds
// descriptors of the server's (the command's socket and the one upstream),
// and the server needs descriptors for everything else it does: without a
// bound, one call opening connections and holding them (four allowHosts
// sessions did) left the server none, and every other call failed with
// EMFILE. So a call may hold MaxConnsPerCall connections at once, and all
// calls together MaxConnsTotal (less where the server's own limit of open
// files is low: an eighth of it); a connection past either is closed at once
// and recorded as a denial, and what the call and the others already hold
// goes on. For a command a connection is one it made to the proxy; for
// execute_js's fetch, one the server dialled for it.
const (
	MaxConnsPerCall = 128
	MaxConnsTotal   = 1024
)

// connLimits are the limits for a server whose soft RLIMIT_NOFILE is nofile
// (0: unknown): MaxConnsTotal or an eighth of nofile if less (each connection
// holds two descriptors, and the rest of the server needs the others), and
// per call MaxConnsPerCall or a quarter of the total if less, so that no one
// call can take what the others need.
func connLimits(nofile uint64) (perCall, total int64) {
	total = MaxConnsTotal
	if nofile > 0 && int64(nofile/8) < total {
		total = max(int64(nofile/8), 16)
	}
	return min(MaxConnsPerCall, max(total/4, 4)), total
}

func serverConnLimits() (perCall, total int64) {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return connLimits(0)
	}
	return connLimits(l.Cur)
}

// limiter counts connections open.
type limiter struct {
	open atomic.Int64
}

// acquire takes a connection of the call, or records and returns the denial
// when the call or the server holds as many as it may.
func (c *Call) acquire() *Denial {
	p := c.p
	var d *Denial
	switch {
	case c.held.open.Add(1) > p.perCall:
		d = &Denial{Host: "*", Reason: fmt.Sprintf("too many connections at once: this call may hold %d", p.perCall)}
	case p.held.open.Add(1) > p.total:
		p.held.open.Add(-1)
		d = &Denial{Host: "*", Reason: fmt.Sprintf("too many connections at once: the server's %d for all calls are in use", p.total)}
	default:
		return nil
	}
	c.held.open.Add(-1)
	c.rec.deny(*d)
	return d
}

// release gives back a connection acquire took.
func (c *Call) release() {
	c.held.open.Add(-1)
	c.p.held.open.Add(-1)
}

// Open is how many connections the call holds (for tests).
func (c *Call) Open() int64 { return c.held.open.Load() }

// countedConn gives its connection back to the call's count when closed,
// once, and is closed with the call.
type countedConn struct {
	net.Conn
	c    *Call
	once sync.Once
}

func (cc *countedConn) Close() error {
	err := cc.Conn.Close()
	cc.once.Do(func() {
		cc.c.untrack(cc)
		cc.c.release()
	})
	return err
}

// Package proxy is the host side of network by host: a proxy in the server
// process through which a call whose allowHosts list is not empty reaches the
// network, and reaches only what the list allows.
//
// It speaks HTTP (absolute-form requests for http:// URLs, each request checked
// on its own), HTTP CONNECT and SOCKS5 (CONNECT, with the name resolved here:
// socks5h). For every connection it matches the host asked for against the
// call's list before any DNS, resolves the name itself, once, refuses
// addresses the list does not name explicitly when they are loopback, private,
// link-local, metadata, this machine's own and the like (policy.ForbiddenAddr),
// and connects to the address it checked: a second lookup that could answer
// otherwise (DNS rebinding) never happens. It does not intercept TLS. Every
// connection allowed or denied is recorded for the call's result (Record).
//
// On Linux the connections of a command come from its launcher: the launcher
// accepts them in the command's network namespace and hands each accepted
// socket over, as a descriptor, on one seqpacket connection to the proxy's unix
// socket (Socket) whose first message names the call, "AUTOBOX-PROXY <token>".
// The proxy then talks to the command's socket itself: no relay in between.
// The command never holds the token, and no other process can use the proxy
// without it (the socket's directory is the server user's alone too). Where
// there is no launcher (macOS), a loopback TCP listener takes the token as
// proxy credentials (tcp.go). execute_js's fetch uses Call.DialContext
// directly, with the same checks and records.
package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/hostsock"
	"github.com/autobox-dev/autobox/policy"
)

// Preamble starts every connection to the proxy's socket, followed by the
// call's token and a newline.
const Preamble = policy.ProxyPreamble

// Proxy serves the calls registered with it. Safe for concurrent use.
type Proxy struct {
	dir      string
	ln       net.Listener
	tcp      net.Listener // see ListenTCP; nil until then
	resolver *resolver
	wg       sync.WaitGroup

	perCall, total int64   // connection limits (see MaxConnsPerCall)
	held           limiter // connections open, all calls

	// originalDstHook, if set, says where a redirected socket was headed
	// instead of the kernel (tests, which have no redirect).
	originalDstHook func(fd int) (netip.AddrPort, error)

	mu     sync.Mutex
	calls  map[string]*Call
	closed bool
}

// New starts a proxy listening on a unix socket in a new directory below
// parent (0700, named after this process so that a later one can remove it if
// this one is killed).
func New(parent string) (*Proxy, error) {
	dir, ln, err := hostsock.Listen(parent, "autobox-proxy", "proxy.sock")
	if err != nil {
		return nil, fmt.Errorf("starting the proxy: %w", err)
	}
	p := &Proxy{dir: dir, ln: ln, resolver: newResolver(), calls: map[string]*Call{}}
	p.perCall, p.total = serverConnLimits()
	p.wg.Add(1)
	go p.serveOn(ln, p.handle)
	return p, nil
}

// Socket is the path of the proxy's unix socket.
func (p *Proxy) Socket() string { return p.ln.Addr().String() }

// Close stops the proxy, ends every connection and removes its socket.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	calls := make([]*Call, 0, len(p.calls))
	for _, c := range p.calls {
		calls = append(calls, c)
	}
	tcp := p.tcp
	p.mu.Unlock()
	p.ln.Close()
	if tcp != nil {
		tcp.Close()
	}
	for _, c := range calls {
		c.Close()
	}
	p.wg.Wait()
	os.RemoveAll(p.dir)
}

// serveOn accepts connections on ln and hands each to handle.
func (p *Proxy) serveOn(ln net.Listener, handle func(net.Conn)) {
	defer p.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			handle(conn)
		}()
	}
}

// handle reads a launcher's connection: the preamble naming the call, then
// messages each carrying one accepted socket of the command, served at once.
func (p *Proxy) handle(conn net.Conn) {
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return
	}
	buf, oob := make([]byte, 256), make([]byte, unix.CmsgSpace(4*8))
	uc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, _, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return
	}
	line := string(buf[:n])
	if !strings.HasPrefix(line, Preamble) {
		return
	}
	c := p.call(strings.TrimSpace(strings.TrimPrefix(line, Preamble)))
	if c == nil || !c.track(conn) {
		return
	}
	defer c.untrack(conn)
	uc.SetReadDeadline(time.Time{})
	for {
		n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		if string(buf[:n]) == policy.ProxyTransparent {
			c.serveTransparent(hostsock.PassedFDs(oob[:oobn]))
			// The answer: served. The launcher reports the command's exit
			// only after it, so the call's Close finds the listeners.
			uc.Write([]byte(policy.ProxyTransparent))
			continue
		}
		for _, fd := range hostsock.PassedFDs(oob[:oobn]) {
			// Past the call's or the server's limit, closed before anything
			// else is spent on it.
			if c.acquire() != nil {
				unix.Close(fd)
				continue
			}
			f := os.NewFile(uintptr(fd), "command-socket")
			client, err := net.FileConn(f)
			f.Close()
			if err != nil {
				c.release()
				continue
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.release()
				c.serveClient(client)
			}()
		}
	}
}

// serveClient serves a client connection of the call as HTTP or SOCKS5.
func (c *Call) serveClient(conn net.Conn) {
	defer conn.Close()
	if !c.begin() {
		return
	}
	defer c.end()
	if !c.track(conn) {
		return
	}
	defer c.untrack(conn)
	br := bufio.NewReaderSize(conn, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		c.serveSOCKS(conn, br)
		return
	}
	c.serveHTTP(conn, br)
}

func (p *Proxy) call(token string) *Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[token]
}

// Register makes a call known to the proxy, allowed what allow allows until
// Close. ctx bounds its connections' dials (the call's deadline). ask, if not
// nil, asks the user about a host:port that allow does not allow, while the
// connection waits (ask.go); nil denies it at once.
func (p *Proxy) Register(ctx context.Context, allow policy.AllowHosts, ask Asker) (*Call, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Call{p: p, token: hex.EncodeToString(b[:]), allow: allow, asking: asking{ask: ask}, ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
	c.rec.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cancel()
		return nil, errors.New("the proxy is closed")
	}
	p.calls[c.token] = c
	return c, nil
}

// Call is one call's use of the proxy.
type Call struct {
	p      *Proxy
	token  string
	allow  policy.AllowHosts
	ctx    context.Context
	cancel context.CancelFunc
	rec    recorder
	held   limiter // connections open (see acquire)
	asking asking  // ask.go: the user's answers in this call

	closeOnce sync.Once

	mu             sync.Mutex
	conns          map[net.Conn]bool     // the command's connections and their upstream ones
	transparentFDs []io.Closer           // the transparent path's DNS sockets
	redirects      []*redirectListener   // the transparent path's listeners (drain_linux.go)
	fake           fakeNames             // the transparent path's names
	httpTransport  *http.Transport       // made by the first forwarded request
	local          map[uint16]localRoute // local.go: session ports
	closed         bool
	busy           int           // handlers running (begin)
	idle           chan struct{} // closed when busy drops to 0 once closed
}

// Token is what a connection's preamble names the call by.
func (c *Call) Token() string { return c.token }

// Close unregisters the call and ends its connections; it returns what the
// call's connections did. Safe to call more than once, and at once.
//
// What the command did before it ended is in the result, even when it ended
// at once: the connections the transparent path's listeners still hold
// queued (connected, not yet accepted) are checked and recorded here, then
// reset (drainRedirects), and the handlers already running are waited for
// (begin). Close cannot be held by the command: the drain takes at most
// maxDrained connections of a listener, and every handler ends once its
// connections are closed and the call's context cancelled, which Close does
// before it waits (and it waits at most maxCloseWait, for a way to block
// that this does not foresee).
func (c *Call) Close() Record {
	c.closeOnce.Do(c.close)
	return c.rec.record()
}

// maxCloseWait bounds Close's wait for the call's handlers.
const maxCloseWait = 10 * time.Second

func (c *Call) close() {
	c.p.mu.Lock()
	delete(c.p.calls, c.token)
	c.p.mu.Unlock()
	c.mu.Lock()
	c.closed = true
	redirects := c.redirects
	c.redirects = nil
	c.mu.Unlock()
	// No handler starts from here on; connections the listeners still
	// hold are recorded as they would have been, without a dial.
	c.drainRedirects(redirects)
	c.cancel()
	c.mu.Lock()
	conns := make([]net.Conn, 0, len(c.conns))
	for conn := range c.conns {
		conns = append(conns, conn)
	}
	for _, h := range c.transparentFDs {
		h.Close()
	}
	var idle chan struct{}
	if c.busy > 0 {
		idle = make(chan struct{})
		c.idle = idle
	}
	c.mu.Unlock()
	// Unlocked: a counted connection's Close untracks itself.
	for _, conn := range conns {
		conn.Close()
	}
	if idle != nil {
		t := time.NewTimer(maxCloseWait)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
	}
	c.mu.Lock()
	tr := c.httpTransport
	c.mu.Unlock()
	if tr != nil {
		tr.CloseIdleConnections()
	}
}

// begin counts a handler of the call, which Close waits for; false once the
// call is closing. end when it is done.
func (c *Call) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.busy++
	return true
}

func (c *Call) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy--
	if c.busy == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// Record is what the call's connections did so far.
func (c *Call) Record() Record { return c.rec.record() }

// track records conn as the call's, to be closed with it; false once the
// call is closed.
func (c *Call) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.conns[conn] = true
	return true
}

// ending reports whether the call is ending (its context is done: cancelled,
// or a question's retry did not come in time), and then answers conn with
// nothing: it waits until conn is closed, by Close or by the command's end.
// The call's command is being killed; an answer (a denial, a reset) could let
// it run on after its call ended, before the kill reached it, where a call
// that ends kills its command first (docs/protocol.md).
func (c *Call) ending(conn net.Conn) bool {
	if c.ctx.Err() == nil {
		return false
	}
	_, _ = io.Copy(io.Discard, conn)
	return true
}

// hold keeps x until the call closes, or closes it now if it has.
func (c *Call) hold(x io.Closer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		x.Close()
		return false
	}
	c.transparentFDs = append(c.transparentFDs, x)
	return true
}

func (c *Call) untrack(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
}

// tunnel joins the client's connection to up: first the bytes the client sent
// after its request (a TLS hello), which br (nil: none) holds, then both ways.
// up is closed with the call, as the client's connection is, so that neither
// way outlives it.
func (c *Call) tunnel(conn net.Conn, br *bufio.Reader, up net.Conn) {
	if !c.track(up) {
		return
	}
	defer c.untrack(up)
	if br != nil && br.Buffered() > 0 {
		b, _ := br.Peek(br.Buffered())
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	hostsock.Splice(conn, up)
}

// Package portfwd makes a session's listening ports reachable, on request,
// from later calls of the same server and from the user's browser, and
// nothing else of the session's network.
//
// A session's command runs in a network namespace of its own; only its
// launcher can enter it (in user-namespaces mode the supervisor lacks the
// capabilities setns needs there). So every launcher whose command has ports
// to offer or to reach connects to this package's unix socket (Socket) and
// names its call by a token (see jail/launcher's ports_linux.go for the launcher's
// half and the exchange):
//
//   - a session's launcher (Endpoint.Dial) connects, on request, to a port of
//     its command's own loopback and hands the connected socket over;
//   - a later call's launcher hands over listeners it opened on its command's
//     loopback (127.0.0.1:P and [::1]:P) before the command started; each
//     connection accepted there is relayed to the port of the session its
//     route names (Endpoint.Route);
//   - Endpoint.Expose listens on the host's 127.0.0.1, on a port the kernel
//     picks, and relays each connection to the session's port: the user's
//     browser reaches the dev server there. It closes with the session.
//
// Every relay is a byte copy in this process; nothing is routed or NATed,
// and no other port or address of either side is reachable through it.
// Like the proxy's, the socket's directory is the server user's alone (0700).
package portfwd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/hostsock"
)

// Preamble starts a launcher's connection, followed by its token and a
// newline. It is jail.PortsPreamble (jail does not import this package).
const Preamble = "AUTOBOX-PORTS "

// Bounds.
const (
	// maxConns bounds the sockets of relayed connections open at once, per
	// endpoint (a relayed connection holds two: maxRelayed connections).
	maxConns   = 256
	maxRelayed = maxConns / 2
	// readyWait bounds how long a dial waits for the session's launcher to
	// connect (it does so as its command starts).
	readyWait = 5 * time.Second
	// dialWait bounds one dial through a launcher.
	dialWait = 10 * time.Second
	// maxNotes bounds the notes an endpoint keeps for its call's result.
	maxNotes = 8
)

// ErrEnded: the session whose port was asked for has ended.
var ErrEnded = errors.New("the session has ended")

// Server accepts the launchers' connections. Safe for concurrent use.
type Server struct {
	dir string
	ln  net.Listener
	wg  sync.WaitGroup

	mu     sync.Mutex
	eps    map[string]*Endpoint
	closed bool
}

// New listens on a unix socket in a new directory below parent (0700, named
// after this process so that a later one can remove it if this one is killed).
func New(parent string) (*Server, error) {
	dir, ln, err := hostsock.Listen(parent, "autobox-ports", "ports.sock")
	if err != nil {
		return nil, fmt.Errorf("starting the session ports' relay: %w", err)
	}
	s := &Server{dir: dir, ln: ln, eps: map[string]*Endpoint{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Socket is the path launchers connect to.
func (s *Server) Socket() string { return s.ln.Addr().String() }

// Close ends every endpoint and removes the socket.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	eps := make([]*Endpoint, 0, len(s.eps))
	for _, e := range s.eps {
		eps = append(eps, e)
	}
	s.mu.Unlock()
	s.ln.Close()
	for _, e := range eps {
		e.Close()
	}
	s.wg.Wait()
	os.RemoveAll(s.dir)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(conn.(*net.UnixConn))
		}()
	}
}

// handle reads a launcher's preamble and gives the connection to its
// endpoint, which reads it until it ends.
func (s *Server) handle(conn *net.UnixConn) {
	buf := make([]byte, 256)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), Preamble) {
		conn.Close()
		return
	}
	token := strings.TrimSpace(strings.TrimPrefix(string(buf[:n]), Preamble))
	s.mu.Lock()
	e := s.eps[token]
	s.mu.Unlock()
	if e == nil || !e.attach(conn) {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	e.read(conn)
}

// Register makes a call known: its launcher is to connect with the
// endpoint's token (see Endpoint). The caller closes the endpoint.
func (s *Server) Register() (*Endpoint, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	e := &Endpoint{s: s, token: hex.EncodeToString(b[:]), ready: make(chan struct{}), gone: make(chan struct{}),
		routes: map[uint16]Route{}, pending: map[string]chan dialReply{}, conns: map[net.Conn]bool{}, relaying: make(chan struct{}, maxRelayed)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("the server is shutting down")
	}
	s.eps[e.token] = e
	return e, nil
}

// Route says where a connection to a port of a call's loopback goes: to Port
// of Target's command, or, with Dial set, where Dial connects (a port of the
// host's loopback, through the proxy's checks). Name is the entry that asked
// for it, for notes.
type Route struct {
	Target *Endpoint
	Port   uint16
	Dial   func(ctx context.Context) (net.Conn, error)
	Name   string
}

// dial connects along r.
func (r Route) dial(ctx context.Context) (net.Conn, error) {
	if r.Dial != nil {
		return r.Dial(ctx)
	}
	return r.Target.Dial(ctx, r.Port)
}

// Endpoint is one call's (or session's) side: its launcher's connection, the
// routes of its listeners, its exposed ports and the connections relayed.
type Endpoint struct {
	s     *Server
	token string
	ready chan struct{} // closed when the launcher has connected
	gone  chan struct{} // closed when its connection ends, or Close

	mu        sync.Mutex
	conn      *net.UnixConn
	routes    map[uint16]Route
	next      uint64
	pending   map[string]chan dialReply
	listeners []net.Listener
	conns     map[net.Conn]bool
	relaying  chan struct{} // a token per connection accepted and relayed (acceptOn)
	notes     []string
	useHold   func() (release func()) // see SetHold
	closed    bool
	goneOnce  sync.Once
}

type dialReply struct {
	conn net.Conn
	err  error
}

// Token names the endpoint's call on the launcher's connection.
func (e *Endpoint) Token() string { return e.token }

// Route sends connections to port on the call's loopback along r. Call it
// before the call starts.
func (e *Endpoint) Route(port uint16, r Route) {
	e.mu.Lock()
	e.routes[port] = r
	e.mu.Unlock()
}

// SetHold gives a session's endpoint what counts a connection to its ports
// as a use of the session, from the dial until the connection closes.
func (e *Endpoint) SetHold(hold func() (release func())) {
	e.mu.Lock()
	e.useHold = hold
	e.mu.Unlock()
}

// Routed returns the route of a port of the call's loopback, if any.
func (e *Endpoint) Routed(port uint16) (Route, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.routes[port]
	return r, ok
}

func (e *Endpoint) attach(conn *net.UnixConn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.conn != nil {
		return false
	}
	e.conn = conn
	close(e.ready)
	return true
}

// read serves the launcher's messages until its connection ends.
func (e *Endpoint) read(conn *net.UnixConn) {
	defer e.end()
	buf, oob := make([]byte, 512), make([]byte, unix.CmsgSpace(4*64))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		fds := hostsock.PassedFDs(oob[:oobn])
		msg := string(buf[:n])
		switch {
		case msg == "L":
			e.serveListeners(fds)
		case strings.HasPrefix(msg, "C "):
			e.answer(strings.TrimPrefix(msg, "C "), fds, "")
		case strings.HasPrefix(msg, "E "):
			id, why, _ := strings.Cut(strings.TrimPrefix(msg, "E "), " ")
			e.answer(id, fds, why)
		default:
			closeFDs(fds)
		}
	}
}

// end marks the launcher gone: pending and later dials fail.
func (e *Endpoint) end() {
	e.goneOnce.Do(func() { close(e.gone) })
	e.mu.Lock()
	pending := e.pending
	e.pending = map[string]chan dialReply{}
	if e.conn != nil {
		e.conn.Close()
	}
	e.mu.Unlock()
	for _, ch := range pending {
		ch <- dialReply{err: ErrEnded}
	}
}

// answer completes the dial id with the socket in fds, or with why.
func (e *Endpoint) answer(id string, fds []int, why string) {
	e.mu.Lock()
	ch := e.pending[id]
	delete(e.pending, id)
	e.mu.Unlock()
	if ch == nil || why != "" || len(fds) != 1 {
		closeFDs(fds)
		if ch != nil {
			if why == "" {
				why = "the launcher answered without a socket"
			}
			ch <- dialReply{err: errors.New(why)}
		}
		return
	}
	f := os.NewFile(uintptr(fds[0]), "session-port")
	conn, err := net.FileConn(f)
	f.Close()
	ch <- dialReply{conn: conn, err: err}
}

// Dial connects to port on the loopback of the endpoint's command (a
// session's), through its launcher.
func (e *Endpoint) Dial(ctx context.Context, port uint16) (net.Conn, error) {
	select {
	case <-e.ready:
	case <-e.gone:
		return nil, ErrEnded
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(readyWait):
		return nil, errors.New("the session's launcher did not connect")
	}
	ch := make(chan dialReply, 1)
	e.mu.Lock()
	if e.closed || e.conn == nil {
		e.mu.Unlock()
		return nil, ErrEnded
	}
	e.next++
	id := strconv.FormatUint(e.next, 10)
	e.pending[id] = ch
	conn := e.conn
	e.mu.Unlock()
	if _, _, err := conn.WriteMsgUnix([]byte("D "+id+" "+strconv.Itoa(int(port))), nil, nil); err != nil {
		e.mu.Lock()
		delete(e.pending, id)
		e.mu.Unlock()
		return nil, ErrEnded
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		e.mu.Lock()
		hold := e.useHold
		e.mu.Unlock()
		if hold == nil {
			return r.conn, nil
		}
		return &heldConn{TCPConn: r.conn.(*net.TCPConn), release: hold()}, nil
	case <-ctx.Done():
	case <-time.After(dialWait):
	}
	e.mu.Lock()
	delete(e.pending, id)
	e.mu.Unlock()
	select { // answered meanwhile
	case r := <-ch:
		if r.conn != nil {
			r.conn.Close()
		}
	default:
	}
	return nil, fmt.Errorf("connecting to port %d in the session: timed out", port)
}

// Close ends the endpoint: its launcher's connection, listeners, exposed
// ports and relayed connections. Safe to call more than once.
func (e *Endpoint) Close() {
	e.s.mu.Lock()
	delete(e.s.eps, e.token)
	e.s.mu.Unlock()
	e.mu.Lock()
	e.closed = true
	lns := e.listeners
	e.listeners = nil
	conns := make([]net.Conn, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, l := range lns {
		l.Close()
	}
	for _, c := range conns {
		c.Close()
	}
	e.end()
}

// Notes are what went wrong with the call's relayed connections (a session
// that has ended, a port nothing listens on), for its result.
func (e *Endpoint) Notes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.notes...)
}

func (e *Endpoint) note(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range e.notes {
		if n == s {
			return
		}
	}
	if len(e.notes) < maxNotes {
		e.notes = append(e.notes, s)
	}
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// heldConn is a connection to a session's port that counts as a use of the
// session until it is closed.
type heldConn struct {
	*net.TCPConn
	once    sync.Once
	release func()
}

func (c *heldConn) Close() error {
	c.once.Do(c.release)
	return c.TCPConn.Close()
}

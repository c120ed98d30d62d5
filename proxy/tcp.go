package proxy

import (
	"bufio"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Where there is no launcher to forward a command's connections (macOS, whose
// seatbelt lets the command connect to the proxy's loopback port and nowhere
// else), the proxy also listens on loopback TCP, and a connection names its call
// by credentials: user "autobox" and the call's token as the password, in the
// proxy URL the command is given (HTTP Proxy-Authorization: Basic; SOCKS5
// username/password, RFC 1929). Anything without them is refused.

// ProxyUser is the user name of a call's proxy credentials.
const ProxyUser = "autobox"

// ListenTCP starts the loopback TCP listener (once) and returns its port.
func (p *Proxy) ListenTCP() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errors.New("the proxy is closed")
	}
	if p.tcp == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p.tcp = ln
		p.wg.Add(1)
		go p.serveOn(ln, p.handleTCP)
	}
	return p.tcp.Addr().(*net.TCPAddr).Port, nil
}

// URL is the call's proxy URL on the TCP listener, credentials included, for a
// scheme ("http", "socks5h").
func (c *Call) URL(scheme string, port int) string {
	return scheme + "://" + ProxyUser + ":" + c.token + "@127.0.0.1:" + strconv.Itoa(port)
}

func (p *Proxy) handleTCP(conn net.Conn) {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReaderSize(conn, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		c := p.socksLogin(conn, br)
		if c == nil || !c.track(conn) {
			return
		}
		defer c.untrack(conn)
		if c.acquire() != nil {
			socksReply(conn, socksGeneralFailure)
			return
		}
		defer c.release()
		conn.SetReadDeadline(time.Time{})
		c.serveSOCKSRequest(conn, br)
		return
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	c := p.call(basicToken(req.Header.Get("Proxy-Authorization")))
	if c == nil {
		io.WriteString(conn, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"autobox\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	if !c.track(conn) {
		return
	}
	defer c.untrack(conn)
	if d := c.acquire(); d != nil {
		writeError(conn, http.StatusServiceUnavailable, "autobox proxy: "+d.Reason, d.Reason)
		return
	}
	defer c.release()
	conn.SetReadDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		c.connect(conn, br, req)
		return
	}
	if c.forward(conn, req) {
		c.serveHTTP(conn, br)
	}
}

// basicToken is the password of Basic credentials for ProxyUser.
func basicToken(h string) string {
	enc, ok := strings.CutPrefix(h, "Basic ")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return ""
	}
	user, pass, ok := strings.Cut(string(b), ":")
	if !ok || user != ProxyUser {
		return ""
	}
	return pass
}

// socksLogin negotiates username/password authentication and returns the call
// the password names, or nil (the client has been told).
func (p *Proxy) socksLogin(conn net.Conn, br *bufio.Reader) *Call {
	methods, ok := socksMethods(br)
	if !ok {
		return nil
	}
	if !strings.ContainsRune(string(methods), socksMethodPassword) {
		conn.Write([]byte{socksVersion, socksNoAcceptableMethod})
		return nil
	}
	conn.Write([]byte{socksVersion, socksMethodPassword})
	// RFC 1929: version 1, ULEN, UNAME, PLEN, PASSWD.
	var v [2]byte
	if _, err := io.ReadFull(br, v[:]); err != nil || v[0] != 1 {
		return nil
	}
	user := make([]byte, v[1])
	if _, err := io.ReadFull(br, user); err != nil {
		return nil
	}
	n, err := br.ReadByte()
	if err != nil {
		return nil
	}
	pass := make([]byte, n)
	if _, err := io.ReadFull(br, pass); err != nil {
		return nil
	}
	var c *Call
	if string(user) == ProxyUser {
		c = p.call(string(pass))
	}
	if c == nil {
		conn.Write([]byte{1, 1})
		return nil
	}
	conn.Write([]byte{1, 0})
	return c
}

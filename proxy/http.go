package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// hopHeaders are the headers of one connection, not of the request: never
// forwarded (RFC 9110 7.6.1), nor the proxy's own.
var hopHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Connection",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// serveHTTP answers HTTP proxy requests on conn until it closes: CONNECT
// tunnels, and absolute-form http:// requests, each checked on its own (a
// keep-alive connection may ask for another host next).
func (c *Call) serveHTTP(conn net.Conn, br *bufio.Reader) {
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				writeError(conn, http.StatusBadRequest, "autobox proxy: unreadable request: "+err.Error(), "")
			}
			return
		}
		if req.Method == http.MethodConnect {
			c.connect(conn, br, req)
			return
		}
		if !c.forward(conn, req) {
			return
		}
	}
}

// connect opens a tunnel to the request's host:port.
func (c *Call) connect(conn net.Conn, br *bufio.Reader, req *http.Request) {
	host, port, err := splitTarget(req.Host, "")
	if err != nil {
		writeError(conn, http.StatusBadRequest, "autobox proxy: CONNECT to "+req.Host+": "+err.Error(), "")
		return
	}
	up, err := c.dial(c.ctx, host, port)
	if err != nil {
		if !c.ending(conn) {
			writeDialError(conn, err)
		}
		return
	}
	defer up.Close()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	c.tunnel(conn, br, up)
}

// forward sends one absolute-form request upstream and its response back; it
// reports whether the connection may carry another request.
func (c *Call) forward(conn net.Conn, req *http.Request) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		msg := "autobox proxy: send http:// URLs in absolute form, and https:// through CONNECT"
		if req.URL.Scheme != "" && req.URL.Scheme != "http" {
			msg = fmt.Sprintf("autobox proxy: %s:// is not proxied (http:// in absolute form, https:// through CONNECT)", req.URL.Scheme)
		}
		writeError(conn, http.StatusBadRequest, msg, "")
		return false
	}
	out := req.Clone(c.ctx)
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if req.Body != nil {
		out.Body = req.Body
	}
	resp, err := c.transport().RoundTrip(out)
	if err != nil {
		if !c.ending(conn) {
			writeDialError(conn, err)
		}
		return false
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		if h != "Transfer-Encoding" {
			resp.Header.Del(h)
		}
	}
	keep := !req.Close && !resp.Close
	resp.Close = !keep
	if err := resp.Write(conn); err != nil {
		return false
	}
	return keep
}

// transport is the call's HTTP client side, whose every new connection is
// dialled through the call's checks.
func (c *Call) transport() *http.Transport {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.httpTransport == nil {
		c.httpTransport = &http.Transport{
			Proxy:               nil,
			DialContext:         c.dialAddr,
			MaxIdleConnsPerHost: 4,
			MaxIdleConns:        16,   // the client connections bound the busy ones
			DisableCompression:  true, // pass bodies as they come
		}
	}
	return c.httpTransport
}

// writeDialError answers a request whose connection failed: 403 with the
// reason and the entry to add for a denial, 502 otherwise.
func writeDialError(conn net.Conn, err error) {
	var d *Denial
	if errors.As(err, &d) {
		writeError(conn, http.StatusForbidden, d.Advice(), d.Reason)
		return
	}
	writeError(conn, http.StatusBadGateway, "autobox proxy: "+err.Error(), "")
}

func writeError(conn net.Conn, code int, body, reason string) {
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n",
		code, http.StatusText(code), len(body)+1)
	if reason != "" {
		h += "X-Proxy-Error: " + strings.NewReplacer("\r", " ", "\n", " ").Replace(reason) + "\r\n"
	}
	io.WriteString(conn, h+"\r\n"+body+"\n")
}

// splitTarget splits a request's host[:port], defaulting the port.
func splitTarget(hp, defaultPort string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		if defaultPort == "" {
			return "", 0, fmt.Errorf("no port")
		}
		host, port = hp, defaultPort
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("port %q is not a port", port)
	}
	return host, uint16(n), nil
}

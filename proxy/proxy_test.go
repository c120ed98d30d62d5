package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

type fixture struct {
	t     *testing.T
	p     *Proxy
	web   *httptest.Server // http on loopback
	tls   *httptest.Server // https on loopback
	webHP string           // 127.0.0.1:port
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	p, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s", r.URL.Path) })
	f := &fixture{t: t, p: p, web: httptest.NewServer(h), tls: httptest.NewTLSServer(h)}
	t.Cleanup(f.web.Close)
	t.Cleanup(f.tls.Close)
	f.webHP = strings.TrimPrefix(f.web.URL, "http://")
	return f
}

func (f *fixture) call(entries ...string) *Call {
	f.t.Helper()
	allow, err := policy.ParseAllowHosts("allowHosts", entries)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := f.p.Register(context.Background(), allow, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Close() })
	return c
}

// conn hands the proxy a new client connection for token, as a launcher does:
// one end of a socket pair passed over a seqpacket connection that names the
// call; it returns the other end.
func (f *fixture) conn(token string) net.Conn {
	f.t.Helper()
	ctl, err := net.Dial("unixpacket", f.p.Socket())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ctl.Close() })
	fmt.Fprintf(ctl, "%s%s\n", Preamble, token)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0) // SOCK_CLOEXEC is Linux's
	if err != nil {
		f.t.Fatal(err)
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	// The proxy may have refused the token and closed already (EPIPE): the
	// connection is then refused all the same, and its other end closes below.
	if _, _, err := ctl.(*net.UnixConn).WriteMsgUnix([]byte{0}, unix.UnixRights(fds[1]), nil); err != nil && !errors.Is(err, unix.EPIPE) && !errors.Is(err, unix.ECONNRESET) {
		f.t.Fatal(err)
	}
	unix.Close(fds[1])
	file := os.NewFile(uintptr(fds[0]), "client")
	conn, err := net.FileConn(file)
	file.Close()
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { conn.Close() })
	return conn
}

// client is an HTTP client whose every connection goes through the proxy for c.
func (f *fixture) client(c *Call) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return f.conn(c.Token()), nil
		},
		TLSClientConfig: &tls.Config{RootCAs: f.tls.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
	}}
}

func get(t *testing.T, cl *http.Client, u string) (int, string, http.Header) {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestHTTPForwardAndConnect(t *testing.T) {
	f := newFixture(t)
	tlsHP := strings.TrimPrefix(f.tls.URL, "https://")
	c := f.call(f.webHP, tlsHP)
	cl := f.client(c)
	// Positive controls: an allowed http request, and https through CONNECT.
	if code, body, _ := get(t, cl, f.web.URL+"/a"); code != 200 || body != "hello /a" {
		t.Errorf("allowed http: %d %q", code, body)
	}
	if code, body, _ := get(t, cl, f.tls.URL+"/b"); code != 200 || body != "hello /b" {
		t.Errorf("allowed https: %d %q", code, body)
	}
	// Another loopback port, and a name not in the list.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	code, body, h := get(t, cl, other.URL)
	_, otherPort, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	if code != 403 || h.Get("X-Proxy-Error") != "port "+otherPort+" not allowed" || !strings.Contains(body, `allowHosts needs "127.0.0.1:`+otherPort+`"`) {
		t.Errorf("another loopback port: %d %q %v", code, body, h)
	}
	code, _, h = get(t, cl, "http://not-listed.example/")
	if code != 403 || h.Get("X-Proxy-Error") != "not in allowHosts" {
		t.Errorf("a name not listed: %d %v", code, h)
	}
	rec := c.Record()
	if len(rec.Allowed) != 2 || len(rec.Denied) != 2 {
		t.Errorf("record: %+v", rec)
	}
}

func TestDenials(t *testing.T) {
	f := newFixture(t)
	f.p.resolver.lookupHook = func(host string) ([]netip.Addr, error) {
		switch host {
		case "internal.test":
			return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
		case "meta.test":
			return []netip.Addr{netip.MustParseAddr("::ffff:169.254.169.254")}, nil
		case "web.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host")
	}
	_, port, _ := net.SplitHostPort(f.webHP)
	c := f.call("internal.test", "meta.test", "web.test:"+port, "api.test:8443", "missing.test")
	for _, tc := range []struct{ target, reason string }{
		{"internal.test:443", "resolves to a private address 10.0.0.5"},
		{"meta.test:80", "resolves to a cloud metadata address 169.254.169.254"},
		{"web.test:" + port, "resolves to a loopback address 127.0.0.1"},
		{"api.test:22", "port 22 not allowed"},
		{"missing.test:443", "does not resolve: no such host"},
		{"169.254.169.254:80", "not in allowHosts"},
		{"[::1]:" + port, "not in allowHosts"},
	} {
		_, err := c.DialContext(context.Background(), "tcp", tc.target)
		d, ok := err.(*Denial)
		if !ok || d.Reason != tc.reason {
			t.Errorf("%s: %v, want denial %q", tc.target, err, tc.reason)
			continue
		}
		// What the command is told: a listed name is not to be listed again.
		advice := d.Advice()
		switch listed := !strings.Contains(tc.reason, "not allowed") && tc.reason != "not in allowHosts"; {
		case listed && strings.HasPrefix(tc.reason, "does not resolve"):
			if !strings.Contains(advice, "It is in the call's allowHosts already: the name has no address") || strings.Contains(advice, "allowHosts needs") {
				t.Errorf("%s: advice %q", tc.target, advice)
			}
		case listed:
			if !strings.Contains(advice, "It is in the call's allowHosts, but a name may not lead there; an entry naming the address itself") || strings.Contains(advice, "allowHosts needs") {
				t.Errorf("%s: advice %q", tc.target, advice)
			}
		default:
			if !strings.Contains(advice, "allowHosts needs") {
				t.Errorf("%s: advice %q", tc.target, advice)
			}
		}
	}
	// Positive control: the same loopback server, named explicitly.
	c2 := f.call("web.test:"+port, "127.0.0.1:"+port)
	conn, err := c2.DialContext(context.Background(), "tcp", "web.test:"+port)
	if err != nil {
		t.Fatalf("explicitly allowed loopback: %v", err)
	}
	conn.Close()
}

// TestOneLookup: the proxy connects to the address it checked; a second lookup,
// which here would answer a forbidden address, never happens.
func TestOneLookup(t *testing.T) {
	f := newFixture(t)
	_, port, _ := net.SplitHostPort(f.webHP)
	var lookups atomic.Int32
	f.p.resolver.lookupHook = func(host string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	c := f.call("rebind.test:"+port, "127.0.0.1:"+port)
	cl := f.client(c)
	for i := 0; i < 2; i++ {
		lookups.Store(0)
		if code, body, _ := get(t, cl, "http://rebind.test:"+port+"/x"); code != 200 || body != "hello /x" {
			t.Errorf("request %d: %d %q", i, code, body)
		}
		if n := lookups.Load(); n > 1 {
			t.Errorf("request %d looked the name up %d times", i, n)
		}
	}
}

// TestKeepAliveChecksEachRequest: a second request on the same proxy connection
// to a host not allowed is refused, though the first went through.
func TestKeepAliveChecksEachRequest(t *testing.T) {
	f := newFixture(t)
	c := f.call(f.webHP)
	conn := f.conn(c.Token())
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "GET %s/one HTTP/1.1\r\nHost: %s\r\n\r\n", f.web.URL, f.webHP)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	fmt.Fprintf(conn, "GET http://other.example/two HTTP/1.1\r\nHost: other.example\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("second, another host on the same connection: %v %v", resp, err)
	}
}

func TestSOCKS5(t *testing.T) {
	f := newFixture(t)
	f.p.resolver.lookupHook = func(host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	_, port, _ := net.SplitHostPort(f.webHP)
	p, _ := net.LookupPort("tcp", port)
	c := f.call("web.test:"+port, "127.0.0.1:"+port)
	socks := func(host string, port int) (byte, net.Conn) {
		conn := f.conn(c.Token())
		conn.Write([]byte{5, 1, 0})
		var b [10]byte
		if _, err := io.ReadFull(conn, b[:2]); err != nil || b[1] != 0 {
			t.Fatalf("greeting: %v %v", b[:2], err)
		}
		req := []byte{5, 1, 0, 3, byte(len(host))}
		req = append(req, host...)
		req = binary.BigEndian.AppendUint16(req, uint16(port))
		conn.Write(req)
		if _, err := io.ReadFull(conn, b[:]); err != nil {
			t.Fatalf("reply: %v", err)
		}
		return b[1], conn
	}
	code, conn := socks("web.test", p)
	if code != 0 {
		t.Fatalf("allowed: reply %d", code)
	}
	fmt.Fprintf(conn, "GET /s HTTP/1.0\r\nHost: web.test\r\n\r\n")
	b, _ := io.ReadAll(conn)
	if !strings.HasSuffix(string(b), "hello /s") {
		t.Errorf("through SOCKS: %q", b)
	}
	if code, _ := socks("other.test", 443); code != socksNotAllowed {
		t.Errorf("denied: reply %d, want %d", code, socksNotAllowed)
	}
}

// TestUnknownToken: a connection that names no registered call is closed
// without an answer, and a closed call's tunnels end.
func TestUnknownToken(t *testing.T) {
	f := newFixture(t)
	conn := f.conn("0123")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "GET %s/ HTTP/1.1\r\nHost: x\r\n\r\n", f.web.URL)
	// Closed without an answer (EOF, or a reset: the request was not read).
	if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil || os.IsTimeout(err) {
		t.Errorf("unknown token: read %d %v, want the connection closed", n, err)
	}
	c := f.call(f.webHP)
	tun := f.conn(c.Token())
	fmt.Fprintf(tun, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", f.webHP, f.webHP)
	resp, err := http.ReadResponse(bufio.NewReader(tun), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	c.Close()
	tun.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := tun.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("tunnel after the call closed: %v, want EOF", err)
	}
}

// TestTCPListener: on the loopback TCP listener a call is named by its
// credentials, and nothing goes through without them.
func TestTCPListener(t *testing.T) {
	f := newFixture(t)
	port, err := f.p.ListenTCP()
	if err != nil {
		t.Fatal(err)
	}
	c := f.call(f.webHP)
	withCreds := func(u string) *http.Client {
		pu, _ := url.Parse(u)
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	}
	if code, body, _ := get(t, withCreds(c.URL("http", port)), f.web.URL+"/t"); code != 200 || body != "hello /t" {
		t.Errorf("with the call's credentials: %d %q", code, body)
	}
	if code, _, _ := get(t, withCreds(fmt.Sprintf("http://127.0.0.1:%d", port)), f.web.URL); code != 407 {
		t.Errorf("without credentials: %d, want 407", code)
	}
	if code, _, _ := get(t, withCreds(fmt.Sprintf("http://autobox:wrong@127.0.0.1:%d", port)), f.web.URL); code != 407 {
		t.Errorf("with a wrong token: %d, want 407", code)
	}
	socks := func(pass string) byte {
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.Write([]byte{5, 1, 2})
		var b [10]byte
		if _, err := io.ReadFull(conn, b[:2]); err != nil || b[1] != 2 {
			t.Fatalf("method: %v %v", b[:2], err)
		}
		conn.Write(append(append(append([]byte{1, 7}, "autobox"...), byte(len(pass))), pass...))
		if _, err := io.ReadFull(conn, b[:2]); err != nil {
			return 0xff
		}
		if b[1] != 0 {
			return b[1] + 0x80
		}
		h, p, _ := net.SplitHostPort(f.webHP)
		pn, _ := net.LookupPort("tcp", p)
		ip := net.ParseIP(h).To4()
		conn.Write(binary.BigEndian.AppendUint16(append([]byte{5, 1, 0, 1}, ip...), uint16(pn)))
		io.ReadFull(conn, b[:])
		return b[1]
	}
	if r := socks(c.Token()); r != 0 {
		t.Errorf("SOCKS5 with the token: reply %d", r)
	}
	if r := socks("wrong"); r != 0x81 {
		t.Errorf("SOCKS5 with a wrong token: %#x, want the login refused", r)
	}
}

package proxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// SOCKS5 (RFC 1928), CONNECT only. Names are resolved here (socks5h); the
// connection is already the call's, so no method but "no authentication".
const (
	socksVersion = 5

	socksMethodNone     = 0
	socksMethodPassword = 2 // RFC 1929

	socksCmdConnect = 1

	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4

	socksSucceeded          = 0
	socksGeneralFailure     = 1
	socksNotAllowed         = 2
	socksNetUnreachable     = 3
	socksHostUnreachable    = 4
	socksConnRefused        = 5
	socksCmdNotSupported    = 7
	socksAtypNotSupported   = 8
	socksNoAcceptableMethod = 0xff
)

func (c *Call) serveSOCKS(conn net.Conn, br *bufio.Reader) {
	methods, ok := socksMethods(br)
	if !ok {
		return
	}
	if !bytes.Contains(methods, []byte{socksMethodNone}) {
		conn.Write([]byte{socksVersion, socksNoAcceptableMethod})
		return
	}
	if _, err := conn.Write([]byte{socksVersion, socksMethodNone}); err != nil {
		return
	}
	c.serveSOCKSRequest(conn, br)
}

// socksMethods reads a client's greeting: the methods it offers.
func socksMethods(br *bufio.Reader) ([]byte, bool) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return nil, false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return nil, false
	}
	return methods, true
}

// serveSOCKSRequest reads a request and, for an allowed CONNECT, tunnels.
func (c *Call) serveSOCKSRequest(conn net.Conn, br *bufio.Reader) {
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	host, ok := readSOCKSAddr(br, req[3])
	if !ok {
		socksReply(conn, socksAtypNotSupported)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := binary.BigEndian.Uint16(pb[:])
	if req[1] != socksCmdConnect {
		socksReply(conn, socksCmdNotSupported)
		return
	}
	up, err := c.dial(c.ctx, host, port)
	if err != nil {
		if !c.ending(conn) {
			socksReply(conn, socksCode(err))
		}
		return
	}
	defer up.Close()
	if socksReply(conn, socksSucceeded) != nil {
		return
	}
	c.tunnel(conn, br, up)
}

func readSOCKSAddr(br *bufio.Reader, atyp byte) (string, bool) {
	switch atyp {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return "", false
		}
		return netip.AddrFrom4(b).String(), true
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return "", false
		}
		return netip.AddrFrom16(b).String(), true
	case socksAtypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return "", false
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", false
		}
		return string(b), true
	}
	return "", false
}

// socksReply answers a request; the bound address is not told (zeros).
func socksReply(conn net.Conn, code byte) error {
	_, err := conn.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func socksCode(err error) byte {
	var d *Denial
	switch {
	case errors.As(err, &d):
		return socksNotAllowed
	case errors.Is(err, syscall.ECONNREFUSED):
		return socksConnRefused
	case errors.Is(err, syscall.ENETUNREACH):
		return socksNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return socksHostUnreachable
	}
	return socksGeneralFailure
}

package proxy

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
)

// ConnectMain is `autobox worker connect HOST PORT`, the proxy command that a
// sandboxed command's ssh runs (GIT_SSH_COMMAND, ProxyCommand): it opens a
// CONNECT tunnel to HOST:PORT through the proxy named by HTTPS_PROXY (the
// command's private network's) and joins it to stdin and stdout. A refusal's
// explanation goes to stderr. It returns the exit status.
func ConnectMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: autobox worker connect HOST PORT (an ssh ProxyCommand inside the sandbox)")
		return 2
	}
	target := net.JoinHostPort(args[0], args[1])
	proxyAddr, auth := "127.0.0.1:3128", ""
	if u, err := url.Parse(os.Getenv("HTTPS_PROXY")); err == nil && u.Host != "" {
		proxyAddr = u.Host
		if pass, ok := u.User.Password(); ok {
			auth = "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass)) + "\r\n"
		}
	}
	conn, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "autobox connect: reaching the proxy at %s: %v\n", proxyAddr, err)
		return 1
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, auth)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		fmt.Fprintf(os.Stderr, "autobox connect: %v\n", err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(os.Stderr, "autobox connect: %s: %s\n%s", target, resp.Status, body)
		return 1
	}
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(conn, os.Stdin)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		io.Copy(os.Stdout, br)
		done <- struct{}{}
	}()
	<-done
	<-done
	return 0
}

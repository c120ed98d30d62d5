//go:build linux

// Command probe is a test helper run inside the sandbox by the end-to-end tests: each
// subcommand tries one thing and prints "ok ..." or "denied: <errno>" so a test can
// tell a denial from a crash. It is built statically (CGO_ENABLED=0) by the tests.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe CMD ARGS...")
		os.Exit(2)
	}
	a := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "args":
		for _, s := range a {
			fmt.Printf("[%s]\n", s)
		}
		return
	case "read":
		var b []byte
		b, err = os.ReadFile(a[0])
		if err == nil {
			fmt.Printf("ok %d bytes\n", len(b))
		}
	case "readlink":
		var s string
		s, err = os.Readlink(a[0])
		if err == nil {
			fmt.Printf("ok %s\n", s)
		}
	case "tcp":
		var c net.Conn
		c, err = net.DialTimeout("tcp", a[0], 2*time.Second)
		if err == nil {
			c.Close()
			fmt.Println("ok connected")
		}
	case "udp":
		var c net.Conn
		c, err = net.Dial("udp", a[0])
		if err == nil {
			_, err = c.Write([]byte("ping"))
			c.Close()
			if err == nil {
				fmt.Println("ok sent")
			}
		}
	case "unix":
		var c net.Conn
		c, err = net.Dial("unix", a[0]) // "@name" is an abstract socket
		if err == nil {
			c.Close()
			fmt.Println("ok connected")
		}
	case "listen-tcp":
		var l net.Listener
		l, err = net.Listen("tcp", "127.0.0.1:0")
		if err == nil {
			l.Close()
			fmt.Println("ok listening")
		}
	case "socket":
		// socket FAMILY TYPE: raw socket(2) so seccomp decides, not the Go runtime
		fam, _ := strconv.Atoi(a[0])
		typ, _ := strconv.Atoi(a[1])
		var fd int
		fd, err = syscall.Socket(fam, typ, 0)
		if err == nil {
			syscall.Close(fd)
			fmt.Println("ok socket")
		}
	case "socketpair":
		var fds [2]int
		fds, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.Close(fds[0])
			syscall.Close(fds[1])
			fmt.Println("ok socketpair")
		}
	case "kill":
		pid, _ := strconv.Atoi(a[0])
		sig := syscall.Signal(0)
		if len(a) > 1 {
			n, _ := strconv.Atoi(a[1])
			sig = syscall.Signal(n)
		}
		err = syscall.Kill(pid, sig)
		if err == nil {
			fmt.Println("ok signalled")
		}
	case "fds":
		entries, _ := os.ReadDir("/proc/self/fd")
		var fds []string
		for _, e := range entries {
			fds = append(fds, e.Name())
		}
		fmt.Println("fds", strings.Join(fds, ","))
		return
	case "hog":
		mb, _ := strconv.Atoi(a[0])
		var keep [][]byte
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Println("ok allocated", len(keep), "MB")
		time.Sleep(5 * time.Second)
		return
	case "ptrace":
		pid, _ := strconv.Atoi(a[0])
		err = syscall.PtraceAttach(pid)
		if err == nil {
			fmt.Println("ok attached")
		}
	case "unshare":
		err = syscall.Unshare(syscall.CLONE_NEWUSER)
		if err == nil {
			fmt.Println("ok unshared")
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown probe", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Printf("denied: %v\n", err)
		os.Exit(1)
	}
}

//go:build linux

// Command probe is a test helper run inside the sandbox by the end-to-end tests: each
// subcommand tries one thing and prints "ok ..." or "denied: <errno>" so a test can
// tell a denial from a crash. It is built statically (CGO_ENABLED=0) by the tests.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: probe CMD ARGS...")
		os.Exit(2)
	}
	a := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "nouserns":
		err = noUserNS(a)
	case "nolandlock":
		err = noLandlock(a)
	case "nsagain":
		err = nsAgain(a)
	case "nsagain-worker":
		err = nsAgainWorker(a)
	case "dumpable":
		err = undumpable(atoi(a[0]))
	case "loopback":
		err = loopback()
	case "forkmany":
		err = forkMany(atoi(a[0]))
	case "shm":
		err = shm(a[0], atoi(a[1]))
	case "prlimit":
		err = prlimitOf(atoi(a[0]))
	case "on":
		err = onProcess(a[0], atoi(a[1]), a[2:])
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
	case "tcp-burst":
		// tcp-burst IPV4 FIRST N: blocking connect(2) to ports FIRST.. in
		// turn, each closed at once (what each met is not the point: a
		// refusal may reset it before connect returns), then exit.
		err = tcpBurst(a[0], atoi(a[1]), atoi(a[2]))
	case "tcp-read":
		// tcp-read HOST:PORT: connect (resolving a name itself) and print the first line
		var c net.Conn
		c, err = net.DialTimeout("tcp", a[0], 5*time.Second)
		if err == nil {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 256)
			var n int
			n, err = c.Read(b)
			c.Close()
			if err == nil {
				fmt.Printf("ok read %s", b[:n])
			}
		}
	case "http-get":
		// http-get URL: a Go client that ignores the proxy variables
		err = httpGet(a[0])
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
	case "unix-self":
		// unix-self PATH: listen at PATH ("@name": abstract), connect to it
		// and read what the listener writes: a socket of the command's own.
		err = unixSelf(a[0])
		if err == nil {
			fmt.Println("ok own socket")
		}
	case "unix-after":
		// unix-after FLAG PATH: wait (20 s at most) for the file FLAG, then
		// connect to PATH: a socket the host makes while the command runs.
		for i := 0; i < 400; i++ {
			if _, e := os.Stat(a[0]); e == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		var c net.Conn
		c, err = net.Dial("unix", a[1])
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
			// The probe's own are left out: its handle on this directory
			// (closed by now: no link to read), and the Go runtime's cgroup
			// files (since Go 1.25 it keeps its cgroup's CPU limit open to
			// follow it with GOMAXPROCS, where it sees its cgroups).
			to, err := os.Readlink("/proc/self/fd/" + e.Name())
			if err != nil || strings.HasPrefix(to, "/sys/fs/cgroup/") {
				continue
			}
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
		hold := 5 * time.Second // hog MB [seconds held]
		if len(a) > 1 {
			if n, err := strconv.Atoi(a[1]); err == nil {
				hold = time.Duration(n) * time.Second
			}
		}
		time.Sleep(hold)
		runtime.KeepAlive(keep)
		return
	case "sockfill":
		err = sockFill()
	case "memfd":
		// memfd MB MS: see memfdHold.
		err = memfdHold(atoi(a[0]), atoi(a[1]))
	case "hold":
		// hold MB MS: allocate and touch MB megabytes, hold them MS milliseconds.
		mb, _ := strconv.Atoi(a[0])
		ms, _ := strconv.Atoi(a[1])
		keep := make([]byte, mb<<20)
		for j := 0; j < len(keep); j += 4096 {
			keep[j] = 1
		}
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Println("ok held", len(keep)>>20, "MB")
		return
	case "threads":
		// threads N: start N OS threads that stay (the Go runtime dies if the
		// kernel refuses one).
		n, _ := strconv.Atoi(a[0])
		started := make(chan struct{})
		for i := 0; i < n; i++ {
			go func() {
				runtime.LockOSThread()
				started <- struct{}{}
				select {}
			}()
			<-started
		}
		fmt.Println("ok", n, "threads")
		return
	case "unixgram":
		// unixgram HOW PATH: a datagram socket from socketpair(2), addressed
		// to the named socket PATH by sendto, sendmsg (with an fd attached by
		// SCM_RIGHTS for sendmsg-fd), sendmmsg, or connect and send.
		err = unixgram(a[0], a[1])
		if err == nil {
			fmt.Println("ok sent")
		}
	case "unixpair":
		// unixpair stream|seqpacket PATH: a connected pair, and sendto PATH on
		// one end (the kernel refuses or ignores the address).
		typ := syscall.SOCK_STREAM
		if a[0] == "seqpacket" {
			typ = syscall.SOCK_SEQPACKET
		}
		var fds [2]int
		fds, err = syscall.Socketpair(syscall.AF_UNIX, typ, 0)
		if err == nil {
			err = syscall.Sendto(fds[0], []byte("probe"), 0, &syscall.SockaddrUnix{Name: a[1]})
			if err == nil {
				fmt.Println("ok sent")
			}
		}
	case "attack-pid":
		pid, _ := strconv.Atoi(a[1])
		err = attackPid(a[0], pid)
		if err == nil {
			fmt.Println("ok signalled")
		}
	case "ptrace":
		pid, _ := strconv.Atoi(a[0])
		err = syscall.PtraceAttach(pid)
		if err == nil {
			fmt.Println("ok attached")
		}
	case "session-list":
		err = sessionList(a[0])
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

func unixgram(how, path string) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	to := &unix.SockaddrUnix{Name: path}
	msg := []byte("probe " + how)
	switch how {
	case "sendto":
		return unix.Sendto(fds[0], msg, 0, to)
	case "sendmsg":
		return unix.Sendmsg(fds[0], msg, nil, to, 0)
	case "sendmsg-fd":
		return unix.Sendmsg(fds[0], msg, unix.UnixRights(fds[1]), to, 0)
	case "connect":
		if err := unix.Connect(fds[0], to); err != nil {
			return err
		}
		_, err := unix.Write(fds[0], msg)
		return err
	case "sendmmsg":
		var name unix.RawSockaddrUnix
		name.Family = unix.AF_UNIX
		for i := 0; i < len(path); i++ {
			name.Path[i] = int8(path[i])
		}
		iov := unix.Iovec{Base: &msg[0]}
		iov.SetLen(len(msg))
		var m struct {
			hdr unix.Msghdr
			len uint32
			_   uint32
		}
		m.hdr.Name = (*byte)(unsafe.Pointer(&name))
		m.hdr.Namelen = uint32(2 + len(path) + 1)
		m.hdr.Iov = &iov
		m.hdr.SetIovlen(1)
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fds[0]), uintptr(unsafe.Pointer(&m)), 1, 0, 0, 0)
		if e != 0 {
			return e
		}
		if n != 1 {
			return fmt.Errorf("sendmmsg sent %d messages", n)
		}
		return nil
	}
	return fmt.Errorf("unknown way %q", how)
}

// attackPid tries to end or stop process ppid (the launcher).
func attackPid(how string, ppid int) error {
	switch how {
	case "kill9":
		return unix.Kill(ppid, unix.SIGKILL)
	case "stop":
		return unix.Kill(ppid, unix.SIGSTOP)
	case "pidfd":
		// pidfd_open fails with ENOSYS in the sandbox; a process's /proc
		// directory serves pidfd_send_signal as a pidfd.
		fd, err := unix.PidfdOpen(ppid, 0)
		if err == unix.ENOSYS {
			fd, err = unix.Open(fmt.Sprintf("/proc/%d", ppid), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return err
		}
		return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
	return fmt.Errorf("unknown attack %q", how)
}

func httpGet(url string) error {
	c := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("ok %d %s\n", resp.StatusCode, b)
	return nil
}

func unixSelf(path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("own"))
			c.Close()
		}
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 3)
	if _, err := io.ReadFull(c, b); err != nil {
		return err
	}
	if string(b) != "own" {
		return fmt.Errorf("read %q", b)
	}
	return nil
}

func tcpBurst(ip string, first, n int) error {
	var addr [4]byte
	copy(addr[:], net.ParseIP(ip).To4())
	for port := first; port < first+n; port++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		_ = unix.Connect(fd, &unix.SockaddrInet4{Addr: addr, Port: port})
		unix.Close(fd)
	}
	fmt.Printf("ok %d connects\n", n)
	return nil
}

package jail

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/seccomp"
	"github.com/autobox-dev/autobox/policy"
)

// The test binary plays three roles, chosen in TestMain: the test suite, the
// launcher (`jail.test worker exec`, as `autobox worker exec`), and a victim
// (helperEnv=1) that runs the probes named in its arguments and prints one
// "probe<TAB>result" line each, the result being "ok", an errno name
// ("EACCES") or a value. With policyEnv set the victim first restricts its own
// thread with RestrictThread, which tests it without the launcher.
const (
	helperEnv = "AUTOBOX_JAIL_HELPER"
	policyEnv = "AUTOBOX_JAIL_POLICY"
)

func helperMain(args []string) int {
	runtime.LockOSThread() // probes run on the restricted thread
	pre := map[string]int{}
	for _, a := range args {
		// Sockets created before restricting, to reach Landlock's TCP rules
		// past seccomp's socket family check.
		if strings.HasPrefix(a, "pre-tcp-") {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				fmt.Printf("prepare\t%v\n", err)
				return 3
			}
			pre[a] = fd
		}
	}
	if js := os.Getenv(policyEnv); js != "" {
		var p policy.Sandbox
		if err := json.Unmarshal([]byte(js), &p); err != nil {
			fmt.Printf("restrict\t%v\n", err)
			return 3
		}
		if err := RestrictThread(&p); err != nil {
			fmt.Printf("restrict\t%v\n", err)
			return 3
		}
	}
	for _, a := range args {
		name, arg, _ := strings.Cut(a, ":")
		fmt.Printf("%s\t%s\n", a, probe1(name, arg, pre[a]))
	}
	return 0
}

func result(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return "error: " + err.Error()
}

func errno(e syscall.Errno) string { return result(errOrNil(e)) }

func errOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func openClose(path string, flags int) string {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return result(err)
}

func sockaddr(s string) unix.Sockaddr {
	ap := netip.MustParseAddrPort(s)
	return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
}

var families = map[string][3]int{ // domain, type, protocol
	"inet":    {unix.AF_INET, unix.SOCK_STREAM, 0},
	"inet6":   {unix.AF_INET6, unix.SOCK_DGRAM, 0},
	"netlink": {unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
	"packet":  {unix.AF_PACKET, unix.SOCK_DGRAM, 0},
	"unix":    {unix.AF_UNIX, unix.SOCK_STREAM, 0},
}

func probe1(name, arg string, preFD int) string {
	switch name {
	case "parent-read", "parent-write": // a file below /proc/<the launcher>/
		flags := unix.O_RDONLY
		if name == "parent-write" {
			flags = unix.O_WRONLY
		}
		return openClose(fmt.Sprintf("/proc/%d/%s", os.Getppid(), arg), flags)
	case "read":
		return openClose(arg, unix.O_RDONLY)
	case "readfile": // the contents, or the error
		b, err := os.ReadFile(arg)
		if err != nil {
			return result(err)
		}
		return string(b)
	case "readdir":
		return openClose(arg, unix.O_RDONLY|unix.O_DIRECTORY)
	case "write":
		return openClose(arg, unix.O_WRONLY)
	case "create":
		return openClose(arg, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)
	case "opentrunc": // O_RDONLY|O_TRUNC truncates on Linux
		return openClose(arg, unix.O_RDONLY|unix.O_TRUNC)
	case "truncate":
		return result(unix.Truncate(arg, 0))
	case "chmod":
		return result(unix.Chmod(arg, 0o640))
	case "rename":
		return result(unix.Rename(arg, arg+".renamed"))
	case "link":
		return result(unix.Link(arg, arg+".link"))
	case "unlink":
		return result(unix.Unlink(arg))
	case "mkdir":
		return result(unix.Mkdir(arg, 0o755))
	case "symlink":
		return result(unix.Symlink("target", arg))
	case "exec":
		return forkExecWait(arg, nil)
	case "otherthread-read": // a thread the restriction was not applied to
		c := make(chan string)
		go func() { runtime.LockOSThread(); c <- openClose(arg, unix.O_RDONLY) }()
		return <-c
	case "tcp-connect", "pre-tcp-connect", "tcp-bind", "pre-tcp-bind":
		fd := preFD
		if !strings.HasPrefix(name, "pre-") {
			var err error
			if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
				return result(err)
			}
		}
		defer unix.Close(fd)
		if strings.HasSuffix(name, "bind") {
			return result(unix.Bind(fd, sockaddr(arg)))
		}
		return result(unix.Connect(fd, sockaddr(arg)))
	case "tcp-read": // connect to arg and read until the other end closes
		c, err := net.DialTimeout("tcp", arg, 5*time.Second)
		if err != nil {
			return result(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil {
			return result(err)
		}
		return "read " + string(b)
	case "dns": // a query for arg to 127.0.0.1:53; the answer's rcode
		return dnsQuery(arg)
	case "udp-send":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return result(err)
		}
		defer unix.Close(fd)
		return result(unix.Sendto(fd, []byte("x"), 0, sockaddr(arg)))
	case "socket", "socketpair":
		f, ok := families[arg]
		if !ok {
			return "unknown family"
		}
		if name == "socketpair" {
			fds, err := unix.Socketpair(f[0], f[1]|unix.SOCK_CLOEXEC, f[2])
			if err == nil {
				unix.Close(fds[0])
				unix.Close(fds[1])
			}
			return result(err)
		}
		fd, err := unix.Socket(f[0], f[1]|unix.SOCK_CLOEXEC, f[2])
		if err == nil {
			unix.Close(fd)
		}
		return result(err)
	case "abstract-connect":
		return abstractConnect(arg)
	case "abstract-self": // a listener inside the same sandbox
		ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return result(err)
		}
		defer unix.Close(ln)
		if err := unix.Bind(ln, &unix.SockaddrUnix{Name: "@" + arg}); err != nil {
			return result(err)
		}
		if err := unix.Listen(ln, 1); err != nil {
			return result(err)
		}
		return abstractConnect(arg)
	case "kill":
		pid, _ := strconv.Atoi(arg)
		return result(unix.Kill(pid, unix.SIGURG)) // SIGURG: harmless to a Go process
	case "attack-launcher": // try to end or stop the launcher (the parent)
		return attackLauncher(arg)
	case "kill-self":
		return result(unix.Kill(os.Getpid(), unix.SIGURG))
	case "sys":
		return sysProbe(arg)
	case "info":
		return info(arg)
	}
	return "unknown probe " + name
}

func abstractConnect(name string) string {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	return result(unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + name}))
}

func forkExecWait(path string, sys *syscall.SysProcAttr) string {
	pid, err := syscall.ForkExec(path, []string{path}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}, Sys: sys})
	if err != nil {
		return result(err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return result(err)
	}
	return "ok"
}

// sysProbe makes one system call the sandbox filter cares about. Arguments are
// chosen so that, unfiltered, the kernel fails the call harmlessly with an
// error other than EPERM (all-ones: bad fds, bad pointers, bad flags).
func sysProbe(name string) string {
	const bad = ^uintptr(0)
	switch name {
	case "clone-newuser":
		return forkExecWait("/bin/true", &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER})
	case "clone-plain":
		return forkExecWait("/bin/true", nil)
	case "tiocsti", "tioclinux", "tcgets":
		req := map[string]uintptr{"tiocsti": unix.TIOCSTI, "tioclinux": unix.TIOCLINUX, "tcgets": unix.TCGETS}[name]
		var buf [64]byte
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, req, uintptr(unsafe.Pointer(&buf[0])))
		return errno(e)
	case "personality-query":
		_, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
		return errno(e)
	case "personality-norandom":
		_, _, e := unix.Syscall(unix.SYS_PERSONALITY, 0x0040000, 0, 0) // ADDR_NO_RANDOMIZE
		return errno(e)
	case "clone3":
		_, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		return errno(e)
	}
	arch, _ := seccomp.ArchFor(runtime.GOARCH)
	nr, ok := arch.Nr(name)
	if !ok {
		return "absent"
	}
	_, _, e := unix.Syscall6(uintptr(nr), bad, bad, bad, bad, bad, bad)
	return errno(e)
}

// info reports facts about the process for the environment tests.
func info(what string) string {
	switch what {
	case "fds":
		return listFDs()
	case "stdin":
		var st unix.Stat_t
		if err := unix.Fstat(0, &st); err != nil {
			return result(err)
		}
		return fmt.Sprintf("mode=%o rdev=%d:%d", st.Mode&unix.S_IFMT, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	case "session":
		b, err := os.ReadFile("/proc/self/stat")
		if err != nil {
			return result(err)
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
		sid, _ := unix.Getsid(0)
		return fmt.Sprintf("pid=%d pgrp=%d sid=%d tty=%s", os.Getpid(), unix.Getpgrp(), sid, f[4])
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return result(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && (k == "NoNewPrivs" || k == "Seccomp") {
				out = append(out, k+"="+strings.TrimSpace(v))
			}
		}
		return strings.Join(out, " ")
	case "caps":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return result(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.HasPrefix(k, "Cap") {
				out = append(out, k+":"+strings.TrimSpace(v))
			}
		}
		return strings.Join(out, " ")
	case "env":
		return strings.Join(os.Environ(), " ")
	case "netns":
		l, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			return result(err)
		}
		return l
	case "cwd":
		wd, err := os.Getwd()
		if err != nil {
			return result(err)
		}
		return wd
	}
	return "unknown info " + what
}

// listFDs lists the descriptors this process inherited. The Go runtime opens
// some of its own before main (the cgroup CPU quota files since Go 1.25, the
// poller), always close-on-exec; an inherited descriptor is one without that
// flag. Raw syscalls keep the listing itself from opening more.
func listFDs() string {
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(dfd)
	var fds []int
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getdents(dfd, buf)
		if err != nil {
			return result(err)
		}
		if n <= 0 {
			break
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			fd, err := strconv.Atoi(name)
			if err != nil || fd == dfd {
				continue
			}
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
				fds = append(fds, fd)
			}
		}
	}
	sort.Ints(fds)
	s := make([]string, len(fds))
	for i, fd := range fds {
		s[i] = strconv.Itoa(fd)
	}
	return strings.Join(s, ",")
}

// attackLauncher tries one way of ending or stopping its parent, the launcher,
// and reports the errno (or "ok": sent, which need not mean delivered).
func attackLauncher(how string) string {
	ppid := os.Getppid()
	switch how {
	case "kill9":
		return result(unix.Kill(ppid, unix.SIGKILL))
	case "stop":
		return result(unix.Kill(ppid, unix.SIGSTOP))
	case "killpg": // the launcher leads its own process group
		sid, err := unix.Getsid(0)
		if err != nil {
			return result(err)
		}
		return result(unix.Kill(-sid, unix.SIGKILL))
	case "killall": // every process this one may signal
		return result(unix.Kill(-1, unix.SIGKILL))
	case "pidfd":
		// pidfd_open fails with ENOSYS in the sandbox; a process's /proc
		// directory serves pidfd_send_signal as a pidfd.
		fd, err := unix.PidfdOpen(ppid, 0)
		if err == unix.ENOSYS {
			fd, err = unix.Open(fmt.Sprintf("/proc/%d", ppid), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return result(err)
		}
		defer unix.Close(fd)
		return result(unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0))
	case "ghost": // a thread id that is not the launcher's (this process's own), as the launcher's
		// The kernel answers ESRCH; the filter's rule for the launcher's
		// process (which holds, for a moment, the thread that forked this
		// one, in this process's Landlock domain) refuses it first.
		return result(unix.Tgkill(ppid, os.Getpid(), 0))
	case "ghost-control": // the same call naming this process: no rule, ESRCH
		return result(unix.Tgkill(os.Getpid(), ppid, 0))
	case "tgkill": // every thread of the launcher, one by one
		var tids []int
		if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", ppid)); err == nil {
			for _, task := range tasks {
				tid, _ := strconv.Atoi(task.Name())
				tids = append(tids, tid)
			}
		} else {
			// Not listable: guess, its threads were made right after it.
			for tid := ppid; tid < ppid+64; tid++ {
				tids = append(tids, tid)
			}
		}
		var errs []string
		for _, tid := range tids {
			if err := unix.Tgkill(ppid, tid, unix.SIGKILL); !errors.Is(err, unix.ESRCH) {
				errs = append(errs, result(err))
			}
		}
		sort.Strings(errs)
		return strings.Join(slices.Compact(errs), ",")
	}
	return "unknown attack " + how
}

// dnsQuery asks 127.0.0.1:53 for name's A record and reports the answer's
// response code (5: REFUSED), or the error.
func dnsQuery(name string) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return result(err)
	}
	defer unix.Close(fd)
	q := []byte{0x12, 0x34, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(name, ".") {
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	q = append(q, 0, 0, 1, 0, 1)
	if err := unix.Sendto(fd, q, 0, &unix.SockaddrInet4{Port: 53, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return result(err)
	}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	buf := make([]byte, 512)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return result(err)
	}
	if n < 12 || buf[0] != 0x12 || buf[1] != 0x34 {
		return "bad answer"
	}
	return fmt.Sprintf("rcode=%d", buf[3]&0xf)
}

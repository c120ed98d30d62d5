package jail

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/restrict"
)

// The victim of TestWorkerJailNativeCode (workerjail_linux_test.go): this
// test binary, started as a JS worker is, runs the probes it is given with
// raw system calls on three threads and prints what each answered.

const (
	workerHelperEnv = "AUTOBOX_JAIL_WORKER_HELPER" // "jailed" or "control"
	workerVictimEnv = "AUTOBOX_JAIL_WORKER_VICTIM"
)

func init() {
	switch {
	case os.Getenv(workerVictimEnv) == "1":
		// Anyone may trace it where Yama would refuse a non-ancestor.
		_ = unix.Prctl(unix.PR_SET_PTRACER, unix.PR_SET_PTRACER_ANY, 0, 0, 0)
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case os.Getenv(workerHelperEnv) != "":
		os.Exit(workerHelperMain(os.Getenv(workerHelperEnv) == "jailed", os.Args[1:]))
	}
}

func workerHelperMain(jailed bool, probes []string) int {
	runtime.LockOSThread()
	out := bufio.NewWriter(os.Stdout)
	say := func(k, v string) { fmt.Fprintf(out, "%s\t%s\n", k, v) }
	// A thread that exists before the filter: TSYNC must reach it.
	type req struct {
		probe string
		reply chan string
	}
	old := make(chan req)
	go func() {
		runtime.LockOSThread()
		for r := range old {
			r.reply <- workerProbe(jailed, r.probe)
		}
	}()
	say("pid", strconv.Itoa(os.Getpid()))
	say("uid", strconv.Itoa(os.Getuid()))
	ns, _ := os.Readlink("/proc/self/ns/pid")
	say("pidns", ns)
	say("fds", openFDs())
	var nproc unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NPROC, &nproc)
	say("nproc", strconv.FormatUint(nproc.Cur, 10))
	if jailed {
		say("enter", result(restrict.EnterWorker()))
	}
	for _, p := range probes {
		if n, ok := strings.CutPrefix(p, "threads:"); ok {
			// Threads that stay until the process ends, counted as they start:
			// a refusal ends the process (Go cannot go on without its thread).
			max, _ := strconv.Atoi(n)
			debug.SetMaxThreads(max + 100)
			for i := 1; i <= max; i++ {
				up := make(chan struct{})
				go func() {
					runtime.LockOSThread()
					close(up)
					select {}
				}()
				<-up
				say("thread", strconv.Itoa(i))
				out.Flush()
			}
			say(p, "ok")
			continue
		}
		say(p, workerProbe(jailed, p))
		r := req{p, make(chan string)}
		old <- r
		say(p+"@old", <-r.reply)
		fresh := make(chan string)
		go func() {
			runtime.LockOSThread() // a new thread, made after the filter
			fresh <- workerProbe(jailed, p)
		}()
		say(p+"@new", <-fresh)
	}
	say("ready", "ok")
	out.Flush()
	// Until the test has read this process's threads from /proc.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// atFDCWD is AT_FDCWD (-100) as a system call argument.
const atFDCWD = ^uintptr(99)

// openFDs lists the descriptors this process has open.
func openFDs() string {
	var fds []string
	for fd := 0; fd < 1024; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			fds = append(fds, strconv.Itoa(fd))
		}
	}
	return strings.Join(fds, ",")
}

// rawClone makes a child with flags that exits at once, in native code
// terms: the child runs nothing but the exit.
//
//go:nosplit
func rawClone(flags uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(unix.SYS_CLONE, flags, 0, 0, 0, 0, 0)
	if e == 0 && r == 0 {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	return r, e
}

func reapClone(pid uintptr, e syscall.Errno) string {
	if e != 0 {
		return errno(e)
	}
	var ws unix.WaitStatus
	_, err := unix.Wait4(int(pid), &ws, unix.WALL, nil)
	return result(err)
}

// workerProbe runs one probe "name:arg" and returns "ok" or the errno of the
// first step that failed.
func workerProbe(jailed bool, probe string) string {
	name, arg, _ := strings.Cut(probe, ":")
	switch name {
	case "open":
		p, _ := unix.BytePtrFromString(arg)
		fd, _, e := unix.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(p)), unix.O_RDONLY|unix.O_CLOEXEC, 0, 0, 0)
		if e == 0 {
			unix.Close(int(fd))
		}
		return errno(e)
	case "connect-inet", "connect-unix":
		fam, sa := unix.AF_INET, unix.Sockaddr(nil)
		if name == "connect-unix" {
			fam, sa = unix.AF_UNIX, &unix.SockaddrUnix{Name: arg}
		} else {
			sa = sockaddr(arg)
		}
		fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(fam), unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if e != 0 {
			return "socket: " + errno(e)
		}
		defer unix.Close(int(fd))
		return result(unix.Connect(int(fd), sa))
	case "socketpair":
		var fds [2]int32
		_, _, e := unix.RawSyscall6(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0, uintptr(unsafe.Pointer(&fds)), 0, 0)
		if e == 0 {
			unix.Close(int(fds[0]))
			unix.Close(int(fds[1]))
		}
		return errno(e)
	case "exec":
		if !jailed {
			// Unjailed, an exec that works would replace this process.
			return forkExecWait(arg, nil)
		}
		p, _ := unix.BytePtrFromString(arg)
		argv := []*byte{p, nil}
		_, _, e := unix.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&argv[1])))
		return errno(e)
	case "fork":
		return reapClone(rawClone(uintptr(unix.SIGCHLD)))
	case "vfork":
		return reapClone(rawClone(unix.CLONE_VM | unix.CLONE_VFORK | uintptr(unix.SIGCHLD)))
	case "clone-newuser":
		return reapClone(rawClone(unix.CLONE_NEWUSER | uintptr(unix.SIGCHLD)))
	case "kill":
		pid, _ := strconv.Atoi(arg)
		_, _, e := unix.RawSyscall(unix.SYS_KILL, uintptr(pid), uintptr(unix.SIGKILL), 0)
		return errno(e)
	case "ptrace":
		pid, _ := strconv.Atoi(arg)
		_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_SEIZE, uintptr(pid), 0, 0, 0, 0)
		if e == 0 {
			// Let go at once (the tracer's exit would too).
			_, _, _ = unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_INTERRUPT, uintptr(pid), 0, 0, 0, 0)
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WALL, nil)
			_, _, _ = unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(pid), 0, 0, 0, 0)
		}
		return errno(e)
	case "memfd-exec":
		// A file it makes, with code in it, mapped executable.
		name, _ := unix.BytePtrFromString("code")
		fd, _, e := unix.RawSyscall(unix.SYS_MEMFD_CREATE, uintptr(unsafe.Pointer(name)), unix.MFD_CLOEXEC, 0)
		if e != 0 {
			return "memfd_create: " + errno(e)
		}
		defer unix.Close(int(fd))
		if _, err := unix.Write(int(fd), make([]byte, 4096)); err != nil {
			return "write: " + result(err)
		}
		return mapExec(int(fd), unix.PROT_READ|unix.PROT_EXEC)
	case "mmap-fd", "mmap-exec-fd":
		// A file it was given (a worker has none: the test passes one).
		fd, _ := strconv.Atoi(arg)
		prot := unix.PROT_READ
		if name == "mmap-exec-fd" {
			prot |= unix.PROT_EXEC
		}
		return mapExec(fd, prot)
	case "setsid":
		_, _, e := unix.RawSyscall(unix.SYS_SETSID, 0, 0, 0)
		return errno(e)
	case "dumpable":
		_, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 1, 0)
		return errno(e)
	}
	return "unknown probe " + probe
}

func mapExec(fd, prot int) string {
	addr, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, 4096, uintptr(prot), unix.MAP_PRIVATE, uintptr(fd), 0)
	if e != 0 {
		return "mmap: " + errno(e)
	}
	_, _, _ = unix.RawSyscall(unix.SYS_MUNMAP, addr, 4096, 0)
	return "ok"
}

package launcher

import (
	"bytes"
	"encoding/binary"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The unix socket guard: a command may make unix sockets and connect to its
// own, never to a host's, in every mode.
//
// Landlock up to ABI 7 has no right for connecting to a pathname unix socket,
// and a socket file in a mounted directory (an ssh-agent or gpg-agent socket in
// a home, docker.sock, a socket a host program makes in a rw mount while the
// call runs) is a door to a host service. So the command's seccomp filter
// (seccomp.Options.GuardUnix) sends every connect(2) to the launcher as a
// user notification, and the launcher's guard does the connect on the
// command's behalf:
//
//   - it reads the address from the command's memory and takes the socket
//     itself (pidfd_getfd), then acts on those copies only: a thread of the
//     command that rewrites the address or swaps the descriptor after the
//     check changes nothing (the kernel's CONTINUE would read both again, so
//     it is never used);
//   - a socket that is not AF_UNIX is connected as asked (the network
//     namespace, the proxy and nf_tables rule it, as they rule the command);
//   - a pathname is resolved in the command's root (its private root, or the
//     host's) from its working directory (openat2 RESOLVE_IN_ROOT), pinned as
//     an O_PATH descriptor,
//     and connected through /proc/self/fd/N, so the inode checked is the one
//     connected to; an abstract name is connected as given;
//   - either only if a socket of the call listens there: in the call's own
//     network namespace, one listed by sock_diag at that inode or name (unix
//     sockets belong to the namespace of the process that made them, and the
//     call's processes alone live in it); in the host's namespace (a command
//     with the whole network), one listed there and held open by a process of
//     the call's pid namespace. Anything else fails with EACCES, as a file
//     without write permission does, and is reported.
//
// Datagram unix sockets are refused by the filter: a datagram can be
// addressed to any named socket with sendto or sendmsg, which the guard does
// not see. Stream and seqpacket sockets reach nobody but through connect.
type unixGuard struct {
	listener int  // the seccomp notification descriptor
	root     int  // O_PATH: the command's "/"
	proc     int  // O_PATH: the /proc of the command's pid namespace
	diag     int  // NETLINK_SOCK_DIAG socket in the command's network namespace
	ownNet   bool // that namespace is the call's own
	pidNS    bool // proc is the call's own pid namespace's (else the host's)

	sem    chan struct{} // bounds connects in progress (a blocking one holds a thread)
	diagMu sync.Mutex    // one sock_diag dump at a time on diag

	refused reported // targets refused, for the report
}

// maxGuardConnects bounds the connects the guard does at once; more wait.
const maxGuardConnects = 32

// maxRefusedReported bounds the targets the exit report names.
const maxRefusedReported = 8

// seccompNotif, seccompNotifResp: struct seccomp_notif and
// seccomp_notif_resp (linux/seccomp.h), which x/sys/unix does not define.
type seccompNotif struct {
	id    uint64
	pid   uint32
	flags uint32
	nr    int32
	arch  uint32
	ip    uint64
	args  [6]uint64
}

type seccompNotifResp struct {
	id    uint64
	val   int64
	error int32
	flags uint32
}

// seccompIoctlNotifIDValid is SECCOMP_IOCTL_NOTIF_ID_VALID: _IOW('!', 2, __u64).
const seccompIoctlNotifIDValid = 0x40082102

// newUnixGuard takes the descriptors the command thread opened; serve owns
// them from then on.
func newUnixGuard(listener int, fds guardFDs, ownNet bool) *unixGuard {
	return &unixGuard{listener: listener, root: fds.root, proc: fds.proc, diag: fds.diag, ownNet: ownNet, pidNS: fds.pidNS,
		sem: make(chan struct{}, maxGuardConnects), refused: reported{max: maxRefusedReported}}
}

// serve answers notifications until the listener fails: when the last
// process under the filter is gone, or the launcher exits. It holds no thread
// while it waits, nor does a connect in progress (see connectFor): past
// RLIMIT_NPROC the launcher cannot make threads (applyNproc).
func (g *unixGuard) serve() {
	// Non-blocking first: os.NewFile gives only such a descriptor to the poller.
	if err := unix.SetNonblock(g.listener, true); err != nil {
		return
	}
	f := os.NewFile(uintptr(g.listener), "seccomp-listener")
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	for {
		var n seccompNotif
		var e unix.Errno
		err := rc.Read(func(fd uintptr) bool {
			// RECV blocks whatever the descriptor's flags: ask poll first.
			if ready, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0); ready == 0 {
				return false
			}
			n = seccompNotif{}
			_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
			return true
		})
		switch {
		case err != nil:
			return
		case e == unix.EINTR || e == unix.ENOENT: // ENOENT: the caller went away before we read it
			continue
		case e != 0:
			return
		}
		g.sem <- struct{}{}
		go func() {
			defer func() { <-g.sem }()
			g.answer(&n, g.connect(&n))
		}()
	}
}

// answer sends the result of a notification: errno e, or 0 for success.
func (g *unixGuard) answer(n *seccompNotif, e unix.Errno) {
	r := seccompNotifResp{id: n.id, error: -int32(e)}
	// ENOENT: the caller was interrupted or killed meanwhile; nothing to do.
	_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&r)))
}

// valid reports whether notification id is still pending: its caller has
// not been killed, so the pid it names is still that caller.
func (g *unixGuard) valid(id uint64) bool {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), seccompIoctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// connect does the connect(fd, addr, len) of notification n for its caller.
func (g *unixGuard) connect(n *seccompNotif) unix.Errno {
	pid, fd, ptr, size := int(n.pid), int(int32(n.args[0])), uintptr(n.args[1]), int(int32(n.args[2]))
	if size < 2 || size > unix.SizeofSockaddrAny {
		return unix.EINVAL
	}
	addr := make([]byte, size)
	if got, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &addr[0], Len: uint64(size)}},
		[]unix.RemoteIovec{{Base: ptr, Len: size}}, 0); err != nil || got != size {
		return unix.EFAULT
	}
	// n.pid is the calling thread's id; a pidfd names its thread group.
	pidfd, err := unix.PidfdOpen(g.tgid(pid), 0)
	if err != nil {
		return unix.ESRCH
	}
	defer unix.Close(pidfd)
	if !g.valid(n.id) {
		return unix.ESRCH // pid may name another process now
	}
	sock, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return errnoOf(err, unix.ENOTSOCK)
	}
	if domain != unix.AF_UNIX || binary.NativeEndian.Uint16(addr) != unix.AF_UNIX || size == 2 {
		return connectFor(sock, addr)
	}
	name := addr[2:]
	if name[0] == 0 { // abstract
		switch found, own := g.ownAbstract(string(name)); {
		case !found && g.ownNet:
			return unix.ECONNREFUSED // no such name in the call's namespace, as the kernel says
		case !own:
			g.refuse("@" + printable(name[1:]))
			return unix.EACCES
		}
		return connectFor(sock, addr)
	}
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	p := string(name)
	target, err := g.resolve(pid, p)
	if err != nil {
		return errnoOf(err, unix.ENOENT)
	}
	defer unix.Close(target)
	var st unix.Stat_t
	if err := unix.Fstat(target, &st); err != nil {
		return errnoOf(err, unix.ENOENT)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return unix.ECONNREFUSED // what the kernel answers for a file that is not a socket
	}
	if _, own := g.ownPath(&st); !own {
		g.refuse(p)
		return unix.EACCES
	}
	pinned := append(binary.NativeEndian.AppendUint16(nil, unix.AF_UNIX), "/proc/self/fd/"+strconv.Itoa(target)+"\x00"...)
	return connectFor(sock, pinned)
}

// tgid returns the thread group of thread tid (tid itself if unknown).
func (g *unixGuard) tgid(tid int) int {
	fd, err := unix.Openat(g.proc, strconv.Itoa(tid)+"/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return tid
	}
	defer unix.Close(fd)
	buf := make([]byte, 512)
	n, _ := unix.Read(fd, buf)
	for _, line := range strings.Split(string(buf[:max(n, 0)]), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if id, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return id
			}
		}
	}
	return tid
}

// resolve opens p (absolute, or relative to pid's working directory) as an
// O_PATH descriptor, in the command's root: absolute links and ".." stay in it.
func (g *unixGuard) resolve(pid int, p string) (int, error) {
	if !path.IsAbs(p) {
		buf := make([]byte, unix.PathMax)
		k, err := unix.Readlinkat(g.proc, strconv.Itoa(pid)+"/cwd", buf)
		if err != nil {
			return -1, err
		}
		p = path.Join(string(buf[:k]), p)
	}
	return unix.Openat2(g.root, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// ownPath reports whether a listening socket bound to the file st is in the
// namespace's list (found), and whether it is the call's (own).
func (g *unixGuard) ownPath(st *unix.Stat_t) (found, own bool) {
	dev := kernelDev(st.Dev)
	return g.own(func(s *diagSocket) bool { return s.hasVFS && s.vfsDev == dev && s.vfsIno == uint32(st.Ino) })
}

// ownAbstract is ownPath for an abstract name (with its leading NUL).
func (g *unixGuard) ownAbstract(name string) (found, own bool) {
	return g.own(func(s *diagSocket) bool { return s.name == name })
}

// own reports whether the namespace has a listening unix socket that match
// accepts (found), and whether one is the call's (own). Only inode numbers'
// low 32 bits are in sock_diag's answer: a socket of the call that shares them
// with a host socket's file on the same filesystem would pass for it, and no
// command can choose its files' inode numbers.
func (g *unixGuard) own(match func(*diagSocket) bool) (found, own bool) {
	g.diagMu.Lock()
	socks, err := listeningUnixSockets(g.diag)
	g.diagMu.Unlock()
	if err != nil {
		return false, false
	}
	for i := range socks {
		if !match(&socks[i]) {
			continue
		}
		found = true
		if g.ownNet || g.held(socks[i].ino) {
			return true, true
		}
	}
	return found, false
}

// held reports whether a process of the call holds the socket whose inode
// is ino.
func (g *unixGuard) held(ino uint32) bool {
	want := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	buf := make([]byte, 64)
	for _, pid := range g.callPids() {
		fds, err := readDirNames(g.proc, pid+"/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			k, err := unix.Readlinkat(g.proc, pid+"/fd/"+fd, buf)
			if err == nil && string(buf[:k]) == want {
				return true
			}
		}
	}
	return false
}

// callPids are the processes of the call: every one of its pid namespace,
// or, in the host's, the launcher's descendants (it is their subreaper: an
// orphan of the call is still below it).
func (g *unixGuard) callPids() []string {
	if g.pidNS {
		names, _ := readDirNames(g.proc, ".")
		pids := names[:0]
		for _, n := range names {
			if _, err := strconv.Atoi(n); err == nil {
				pids = append(pids, n)
			}
		}
		return pids
	}
	var pids []string
	queue := []string{strconv.Itoa(os.Getpid())}
	seen := map[string]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		tids, _ := readDirNames(g.proc, pid+"/task")
		for _, tid := range tids {
			b, err := readAt(g.proc, pid+"/task/"+tid+"/children")
			if err != nil {
				continue
			}
			for _, c := range strings.Fields(string(b)) {
				if !seen[c] {
					seen[c] = true
					pids = append(pids, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return pids
}

// refuse keeps a refused target for the report.
func (g *unixGuard) refuse(target string) { g.refused.add(target) }

// refusedTargets returns the targets refused so far; g may be nil.
func (g *unixGuard) refusedTargets() []string {
	if g == nil {
		return nil
	}
	return g.refused.list()
}

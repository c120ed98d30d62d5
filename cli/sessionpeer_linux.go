package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Who may talk to the session server, and how a client knows it reached the
// real one. No sandboxed process may ever drive autobox itself: a command with
// allowNetwork (or a `task run --kind native` harness) is the user's uid, so
// SO_PEERCRED alone would let it start sessions with any mounts it chose.
//
//   - The server listens on an ABSTRACT unix socket with a random name, not on
//     a path. Landlock scoping (ABI >= 6), which every sandboxed command and JS
//     worker has, refuses connecting to an abstract socket bound outside the
//     sandbox's domain; a command without network is in a network namespace
//     of its own (abstract names are per namespace) or cannot make a unix
//     socket at all. A path in the state dir, by contrast, is reachable through
//     any mount that shows it (a read-only mount of $HOME or /root), and
//     Landlock (to ABI 7) does not guard connect(2) to a named socket.
//   - The name is random, written with the server's pid into the lock file
//     (mode 0600 in the state dir): another user cannot guess it, and nothing
//     can bind it before the server does.
//   - Defence in depth where scoping is missing (Landlock ABI < 6): the server
//     refuses a peer whose ancestry holds an autobox launcher or JS worker, or
//     that carries a sandboxed command's marks (no_new_privs with an empty
//     capability bounding set), as well as another uid.
//   - The client checks the server: the peer on the name must be the pid the
//     lock file names, of the client's uid, so a process that bound a stale
//     name receives no call.

// sessionAddr is where a running session server listens: its pid and its
// abstract socket's name (without the leading "@").
type sessionAddr struct {
	pid  int
	name string
}

// newSessionName is a fresh abstract socket name for a server of uid.
func newSessionName() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("autobox-sessions-%d-%s", os.Getuid(), hex.EncodeToString(b[:])), nil
}

// writeSessionAddr records the server's address in its lock file, which it
// holds locked while it runs.
func writeSessionAddr(lock *os.File, a sessionAddr) error {
	if err := lock.Truncate(0); err != nil {
		return err
	}
	_, err := lock.WriteAt([]byte(fmt.Sprintf("%d %s\n", a.pid, a.name)), 0)
	return err
}

// readSessionAddr reads the address a session server recorded; ok is false
// when there is none (never started, or not yet written).
func readSessionAddr(f sessionFiles) (a sessionAddr, ok bool) {
	b, err := os.ReadFile(f.lock)
	if err != nil {
		return a, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 || !strings.HasPrefix(fields[1], "autobox-sessions-") {
		return a, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return a, false
	}
	return sessionAddr{pid: pid, name: fields[1]}, true
}

// dialSession connects to the session server the lock file names and checks
// that the peer is that server, of this user.
func dialSession(f sessionFiles) (*net.UnixConn, error) {
	a, ok := readSessionAddr(f)
	if !ok {
		return nil, errNoServer
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: "@" + a.name, Net: "unix"})
	if err != nil {
		return nil, errNoServer
	}
	cred, err := peerCred(c)
	if err == nil && (int(cred.Uid) != os.Getuid() || int(cred.Pid) != a.pid) {
		err = fmt.Errorf("the process on the session server's socket (pid %d, uid %d) is not the session server the state dir names (pid %d, uid %d): refusing to talk to it", cred.Pid, cred.Uid, a.pid, os.Getuid())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// errNoServer: no session server listens where the state dir says.
var errNoServer = errors.New("no session server runs")

func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := rc.Control(func(fd uintptr) { cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, err
	}
	return cred, credErr
}

// sandboxRoles are the autobox roles that run untrusted code: the launcher of
// a command (and of a native task harness) and a JS worker. Everything a
// sandboxed command starts descends from its launcher while the call lives
// (the launcher is a child subreaper, or the init of its pid namespace).
var sandboxRoles = map[string]bool{"exec": true, "js": true, "limits": true}

// sandboxedPeer says why the process pid must not drive autobox, or "" if
// nothing marks it as sandboxed. self is this binary's path. A process that
// cannot be read (gone, or another pid namespace) is refused: the check fails
// closed.
func sandboxedPeer(pid int, self string) string {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return fmt.Sprintf("its process %d cannot be read: %v", pid, err)
	}
	if statusField(status, "NoNewPrivs") == "1" && strings.Trim(statusField(status, "CapBnd"), "0") == "" {
		return fmt.Sprintf("process %d runs sandboxed (no_new_privs, no capabilities in its bounding set)", pid)
	}
	for p, depth := pid, 0; p > 1 && depth < 4096; depth++ {
		if argv := cmdline(p); isSandboxRole(argv, self) {
			return fmt.Sprintf("process %d runs under an autobox sandbox (its ancestor %d is %q)", pid, p, strings.Join(argv, " "))
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			return fmt.Sprintf("the ancestry of process %d cannot be read: %v", pid, err)
		}
		pp, err := strconv.Atoi(statusField(st, "PPid"))
		if err != nil {
			return fmt.Sprintf("the ancestry of process %d cannot be read", pid)
		}
		p = pp
	}
	return ""
}

func isSandboxRole(argv []string, self string) bool {
	if len(argv) < 3 || argv[1] != "worker" || !sandboxRoles[argv[2]] {
		return false
	}
	return argv[0] == self || filepath.Base(argv[0]) == filepath.Base(self) || filepath.Base(argv[0]) == "autobox"
}

func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte{0})), "\x00")
}

// statusField is the value of a "Name:\tvalue" line of /proc/PID/status.
func statusField(status []byte, name string) string {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

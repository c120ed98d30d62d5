package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestHostSockets: a command makes and reaches unix sockets of its own (a
// database's, tmux's, gpg-agent's), and no host socket: not one in a mounted
// directory (rw or ro), not an abstract one, not one the host makes in a
// mount while the command runs, with the network off or the whole network.
// Every refusal has its positive control: the same probe on a socket of the
// command's own, in the same mount. In every mode: without namespaces the
// guard takes the host's network namespace and the launcher's descendants
// for the call's.
func TestHostSockets(t *testing.T) {
	requireSandbox(t)
	t.Run("default", func(t *testing.T) { hostSockets(t, start(t), namespaced()) })
	t.Run("no-namespaces", func(t *testing.T) {
		tmp := shortTmp(t) // a user's /tmp: the scratch dir is TMPDIR there
		hostSockets(t, startEnv(t, []string{"AUTOBOX_NO_NAMESPACES=1", "TMPDIR=" + tmp}), false)
	})
}

// hostListener listens at addr (a path, or "@name") as the host, and counts
// the connections it accepts.
type hostListener struct{ accepted atomic.Int32 }

func listenHost(t *testing.T, addr string) *hostListener {
	t.Helper()
	l, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "@") {
		os.Chmod(addr, 0o777) // writable by any uid: only the sandbox may refuse
	}
	h := &hostListener{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return h
}

func hostSockets(t *testing.T, s *session, ns bool) {
	rw, ro := compatDir(t), compatDir(t)
	agent := listenHost(t, filepath.Join(rw, "agent.sock"))
	docker := listenHost(t, filepath.Join(ro, "docker.sock"))
	abstractName := fmt.Sprintf("@autobox-test-host-%d-%s", os.Getpid(), t.Name())
	abstract := listenHost(t, abstractName)
	mounts := []map[string]any{
		{"hostPath": rw, "sandboxPath": "/mnt/rw", "mode": "rw"},
		{"hostPath": ro, "sandboxPath": "/mnt/ro", "mode": "ro"},
	}
	slow := map[string]any{"timeoutMs": 30000} // a busy machine is no reason to fail
	if !ns && !jail.UnixGuard() {
		// An old kernel: socket(AF_UNIX) is refused without network, so no
		// socket of the host is reached by path; pairs are the command's own.
		wantDenied(t, "host socket in a rw mount", s.probe(mounts, slow, "unix", "/mnt/rw/agent.sock"))
		wantAllowed(t, "socketpair", s.probe(mounts, slow, "socketpair"))
		return
	}
	for _, network := range []map[string]any{slow, {"allowNetwork": true, "timeoutMs": 30000}} {
		what := fmt.Sprintf(" (allowNetwork %v)", network["allowNetwork"] != nil)
		for _, target := range []string{"/mnt/rw/agent.sock", "/mnt/ro/docker.sock", abstractName} {
			o := s.probe(mounts, network, "unix", target)
			wantDenied(t, "host socket "+target+what, o)
			// In a network namespace of its own an abstract name of the
			// host's does not exist (ECONNREFUSED, no refusal to note).
			if !strings.Contains(o.Stderr, "[autobox: connecting to the unix socket") && !(target == abstractName && ns && network["allowNetwork"] == nil) {
				t.Errorf("no note of the refusal of %s%s: %q", target, what, o.Stderr)
			}
		}
		// Positive controls: the command's own, in the same mount and in
		// its scratch dir, and an abstract one.
		wantAllowed(t, "own socket in the rw mount"+what, s.probe(mounts, network, "unix-self", "/mnt/rw/own.sock"))
		if ns {
			wantAllowed(t, "own socket in /tmp"+what, s.probe(mounts, network, "unix-self", "/tmp/own.sock"))
		}
		wantAllowed(t, "own abstract socket"+what, s.probe(mounts, network, "unix-self", fmt.Sprintf("@own-%d-%s", os.Getpid(), t.Name())))
		os.Remove(filepath.Join(rw, "own.sock"))
	}
	// A socket the host makes in the mount while the command runs.
	o := s.startSession(map[string]any{"command": []string{"/mnt/tools/probe", "unix-after", "/mnt/rw/flag", "/mnt/rw/late.sock"},
		"mounts": append([]map[string]any{toolsMount()}, mounts...), "timeoutMs": 30000})
	late := listenHost(t, filepath.Join(rw, "late.sock"))
	writeFile(t, filepath.Join(rw, "flag"), "go")
	out, f := s.finish(o.SessionID)
	if !strings.HasPrefix(out, "denied:") || f.code() != 1 {
		t.Errorf("a host socket made mid-call: want denied, got %q %+v", out, f)
	}
	if n := late.accepted.Load(); n != 0 {
		t.Errorf("the host's late socket accepted %d connections", n)
	}
	// Datagram sockets (which could be addressed to any named socket by
	// sendto) are refused; stream and seqpacket ones are not.
	wantDenied(t, "socket(AF_UNIX, SOCK_DGRAM)", s.probe(nil, slow, "socket", "1", "2"))
	wantAllowed(t, "socket(AF_UNIX, SOCK_STREAM)", s.probe(nil, slow, "socket", "1", "1"))
	wantAllowed(t, "socket(AF_UNIX, SOCK_SEQPACKET)", s.probe(nil, slow, "socket", "1", "5"))
	for name, h := range map[string]*hostListener{"agent": agent, "docker": docker, "abstract": abstract} {
		if n := h.accepted.Load(); n != 0 {
			t.Errorf("the host's %s socket accepted %d connections from commands", name, n)
		}
	}
}

// TestAutoboxSocketsOutOfReach: autobox's own sockets (the proxy's, which
// launchers hand connections to) are host sockets like any other, even when
// a call mounts the directory that holds them.
func TestAutoboxSocketsOutOfReach(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	// A call with allowHosts makes the proxy listen; its socket lies below
	// the server's TMPDIR.
	s.exec(map[string]any{"command": []string{"true"}, "allowHosts": []string{"example.com"}})
	socks, _ := filepath.Glob(filepath.Join(s.tmp, "autobox-proxy*", "proxy.sock"))
	if len(socks) == 0 {
		t.Skipf("no proxy socket below %s (this mode runs no proxy)", s.tmp)
	}
	dir := filepath.Dir(socks[0])
	o := s.probe([]map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/autobox", "mode": "ro"}}, map[string]any{"timeoutMs": 30000}, "unix", "/mnt/autobox/proxy.sock")
	wantDenied(t, "autobox's proxy socket", o)
}

// shortTmp is a TMPDIR as short as a user's (/tmp), any uid's to write.
func shortTmp(t *testing.T) string {
	tmp, err := os.MkdirTemp("/tmp", "abc-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o1777)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	return tmp
}

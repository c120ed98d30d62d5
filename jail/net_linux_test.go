package jail

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/testnet"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// listeners opens a TCP and a UDP listener on loopback and an abstract unix
// socket, all outside any sandbox.
func listeners(t *testing.T) (tcp, udp, abstract string) {
	t.Helper()
	ln := testnet.TCP(t)
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	abstract = fmt.Sprintf("autobox-jail-test-%d", os.Getpid())
	ul, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	testnet.Serve(t, ul)
	return ln.Addr().String(), pc.LocalAddr().String(), abstract
}

func TestNetwork(t *testing.T) {
	requireJail(t)
	tcp, udp, _ := listeners(t)
	probes := []string{
		"tcp-connect:" + tcp, "tcp-bind:127.0.0.1:0", "udp-send:" + udp,
		"socket:inet", "socket:inet6", "socket:netlink", "socket:packet", "socket:unix",
		"socketpair:unix", "socketpair:inet",
	}
	p := basePolicy(t)
	got, _, _ := startHelper(t, Spec{Sandbox: p}, probes...)
	if usePidNamespace() {
		// A network namespace with loopback alone: sockets on it work, and
		// the host's listener (outside) is not there.
		expect(t, "AllowNetwork=false, loopback alone", got, map[string]string{
			"tcp-connect:" + tcp: "ECONNREFUSED", "tcp-bind:127.0.0.1:0": "ok", "udp-send:" + udp: "ok",
			// Netlink for routing (ip addr), unix sockets of its own
			// (jail/launcher/unixguard_linux.go).
			"socket:inet": "ok", "socket:inet6": "ok", "socket:netlink": "ok",
			"socket:packet": "EAFNOSUPPORT", "socketpair:inet": "EAFNOSUPPORT",
			"socket:unix": "ok", "socketpair:unix": "ok",
		})
	} else {
		expect(t, "AllowNetwork=false", got, map[string]string{
			"tcp-connect:" + tcp: "EAFNOSUPPORT", "tcp-bind:127.0.0.1:0": "EAFNOSUPPORT", "udp-send:" + udp: "EAFNOSUPPORT",
			"socket:inet": "EAFNOSUPPORT", "socket:inet6": "EAFNOSUPPORT", "socket:netlink": "EAFNOSUPPORT",
			"socket:packet": "EAFNOSUPPORT", "socketpair:inet": "EAFNOSUPPORT",
			"socket:unix": "EPERM", "socketpair:unix": "ok",
		})
	}
	p.AllowNetwork = true
	got, _, _ = startHelper(t, Spec{Sandbox: p}, probes...)
	want := map[string]string{
		"tcp-connect:" + tcp: "ok", "tcp-bind:127.0.0.1:0": "ok", "udp-send:" + udp: "ok",
		"socket:inet": "ok", "socket:inet6": "ok", "socket:netlink": "ok",
		"socket:packet": "EPERM", // CAP_NET_RAW: dropped even when the server runs as root
		"socket:unix":   "ok", "socketpair:unix": "ok",
		"socketpair:inet": "ENOTSUP", // (EOPNOTSUPP) the kernel's own answer: not a filter
	}
	expect(t, "AllowNetwork=true", got, want)
}

// TestLandlockTCP reaches Landlock's TCP rules with sockets created before
// the restriction, past seccomp's family check: the second layer holds alone.
func TestLandlockTCP(t *testing.T) {
	if st := requireJail(t); !st.TCPDenied() {
		t.Skipf("Landlock ABI %d < %d: no TCP rules on this kernel", st.LandlockABI, confine.ABINet)
	}
	tcp, _, _ := listeners(t)
	probes := []string{"pre-tcp-connect:" + tcp, "pre-tcp-bind:127.0.0.1:0"}
	p := basePolicy(t)
	got := selfRestricted(t, p, probes...)
	expect(t, "AllowNetwork=false", got, map[string]string{probes[0]: "EACCES", probes[1]: "EACCES"})
	p.AllowNetwork = true
	got = selfRestricted(t, p, probes...)
	expect(t, "AllowNetwork=true", got, map[string]string{probes[0]: "ok", probes[1]: "ok"})
}

func TestScopes(t *testing.T) {
	if st := requireJail(t); !st.Scoped() {
		t.Skipf("Landlock ABI %d < %d: signals and abstract sockets are not scoped on this kernel", st.LandlockABI, confine.ABIScope)
	}
	eachMode(t, testScopes)
}

// testScopes: in a pid namespace of its own the command cannot even name the
// test process (ESRCH); without one Landlock refuses the signal (EPERM).
func testScopes(t *testing.T, m jailMode) {
	_, _, abstract := listeners(t)
	me := fmt.Sprint(os.Getpid())
	outside := "EPERM"
	if m.ns {
		outside = "ESRCH"
	}
	probes := []string{"abstract-connect:" + abstract, "abstract-self:" + abstract + "-inner", "kill:" + me, "kill-self"}
	for _, net := range []bool{false, true} {
		p := basePolicy(t)
		p.AllowNetwork = net
		got, _, _ := startHelper(t, Spec{Sandbox: p}, probes...)
		want := map[string]string{
			probes[0]: "EPERM", "kill:" + me: outside,
			probes[1]: "ok", "kill-self": "ok", // inside the sandbox both work
		}
		switch {
		case !confine.UnixGuardAvailable():
			if !net {
				want[probes[1]] = "EPERM" // no socket(AF_UNIX) at all without the network
			}
		case m.ns && !net:
			// Its own network namespace holds no such name (the kernel's
			// answer, through the unix socket guard).
			want[probes[0]] = "ECONNREFUSED"
		default:
			want[probes[0]] = "EACCES" // the guard: not a socket of the call's
		}
		expect(t, fmt.Sprintf("sandboxed, AllowNetwork=%v", net), got, want)
	}
	if !m.ns {
		got, _, _ := startHelper(t, Spec{Unsafe: true}, probes...)
		expect(t, "unsafe", got, map[string]string{probes[0]: "ok", "kill:" + me: "ok", probes[1]: "ok", "kill-self": "ok"})
	}
}

// fakeProxy is a seqpacket unix socket like the proxy's: it records the
// first message of each connection (the call's preamble) and answers "ok" on
// every socket handed over on it. Of a transparent path's sockets it serves
// the DNS ones as the launcher would without it (refusing every query), and
// records "transparent".
func fakeProxy(t *testing.T) (path string, lines chan string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unixpacket", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines = make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c *net.UnixConn) {
				defer c.Close()
				buf, oob := make([]byte, 256), make([]byte, 64)
				n, _, _, _, err := c.ReadMsgUnix(buf, oob)
				if err != nil {
					return
				}
				lines <- string(buf[:n])
				for {
					n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
					if err != nil {
						return
					}
					transparent := string(buf[:n]) == policy.ProxyTransparent
					if transparent {
						lines <- "transparent"
					}
					msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
					for i := range msgs {
						fds, _ := unix.ParseUnixRights(&msgs[i])
						for _, fd := range fds {
							if typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); transparent && typ == unix.SOCK_DGRAM {
								f := os.NewFile(uintptr(fd), "dns")
								if pc, err := net.FilePacketConn(f); err == nil {
									go refuseDNS(pc)
									t.Cleanup(func() { pc.Close() })
								}
								f.Close()
								continue
							}
							if !transparent {
								unix.Write(fd, []byte("ok"))
							}
							unix.Close(fd)
						}
					}
					if transparent {
						c.Write([]byte(policy.ProxyTransparent)) // the proxy's answer: served
					}
				}
			}(c.(*net.UnixConn))
		}
	}()
	return path, lines
}

// refuseDNS answers every query on pc with REFUSED (the header's QR bit set
// and rcode 5, the question kept), as a launcher does without the transparent
// path.
func refuseDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < 12 {
			continue
		}
		buf[2] |= 0x80
		buf[3] = 5
		_, _ = pc.WriteTo(buf[:n], from)
	}
}

// TestPrivateNetwork: where the launcher may make namespaces, a command with a
// host allowlist (PrivateNetwork) runs in a network of its own: the proxy
// port is forwarded to the supervisor's proxy with the call's token, nothing
// of the host's loopback is there, and DNS queries are refused and reported.
// A pooled command without network runs in an empty namespace of its own; one
// with the whole network in the host's. Without namespaces, PrivateNetwork is
// refused.
func TestPrivateNetwork(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, m jailMode) {
		tcp, _, _ := listeners(t)
		sock, lines := fakeProxy(t)
		hostNS, _ := os.Readlink("/proc/self/ns/net")
		p := basePolicy(t)
		p.ReadOnly = append(p.ReadOnly, "/proc")
		priv := p
		priv.AllowNetwork, priv.PrivateNetwork, priv.ProxyPort = true, true, ProxyPort
		spec := Spec{Sandbox: priv, ProxySocket: sock, ProxyToken: "tok123"}
		if !m.ns {
			spec.Argv = []string{testExe(t), "info:netns"}
			spec.Env = []string{helperEnv + "=1"}
			out := tempFile(t)
			tree, err := Start(testExe(t), &spec, out, out)
			if err == nil {
				_, err = tree.Wait()
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("PrivateNetwork without namespaces: %v, want ErrUnsupported", err)
			}
			return
		}
		probes := []string{"tcp-read:127.0.0.1:3128", "tcp-connect:" + tcp, "dns:Example.COM", "info:netns"}
		got, res, _ := startHelper(t, spec, probes...)
		if got["tcp-read:127.0.0.1:3128"] != "read ok" || got["tcp-connect:"+tcp] != "ECONNREFUSED" || got["dns:Example.COM"] != "rcode=5" || got["info:netns"] == hostNS {
			t.Errorf("private network: %v (host %s)", got, hostNS)
		}
		select {
		case l := <-lines:
			if l != "AUTOBOX-PROXY tok123\n" {
				t.Errorf("the proxy got %q", l)
			}
		case <-time.After(10 * time.Second):
			t.Error("no connection reached the proxy")
		}
		// With the transparent path the proxy answers DNS (and reports the
		// names), else the launcher does.
		transparent := len(lines) > 0 && <-lines == "transparent"
		if ok, _ := TransparentNetwork(); ok != transparent {
			t.Errorf("transparent path handed over: %v, probed: %v", transparent, ok)
		}
		if !transparent && (len(res.Lookups) != 1 || res.Lookups[0] != "example.com") {
			t.Errorf("lookups reported: %v", res.Lookups)
		}
		// Pooled: no network, an empty namespace; the whole network, the host's.
		pool := NewPool(testExe(t), 1, &p)
		defer pool.Close()
		for _, open := range []bool{false, true} {
			sb := p
			sb.AllowNetwork = open
			s := Spec{Sandbox: sb, Argv: []string{testExe(t), "info:netns"}, Env: []string{helperEnv + "=1"}}
			out := tempFile(t)
			tree, err := pool.Start(&s, out, out, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tree.Wait(); err != nil {
				t.Fatal(err)
			}
			ns := parseResults(t, readBack(t, out), []string{"info:netns"})["info:netns"]
			if open != (ns == hostNS) {
				t.Errorf("pooled, AllowNetwork=%v: namespace %s (host %s)", open, ns, hostNS)
			}
		}
	})
}

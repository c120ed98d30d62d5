package jail

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/autobox-dev/autobox/internal/testnet"
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
	expect(t, "AllowNetwork=false", got, map[string]string{
		"tcp-connect:" + tcp: "EAFNOSUPPORT", "tcp-bind:127.0.0.1:0": "EAFNOSUPPORT", "udp-send:" + udp: "EAFNOSUPPORT",
		"socket:inet": "EAFNOSUPPORT", "socket:inet6": "EAFNOSUPPORT", "socket:netlink": "EAFNOSUPPORT",
		"socket:packet": "EAFNOSUPPORT", "socketpair:inet": "EAFNOSUPPORT",
		"socket:unix": "EPERM", "socketpair:unix": "ok",
	})
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
		t.Skipf("Landlock ABI %d < %d: no TCP rules on this kernel", st.LandlockABI, abiNet)
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
		t.Skipf("Landlock ABI %d < %d: signals and abstract sockets are not scoped on this kernel", st.LandlockABI, abiScope)
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
		if !net {
			want[probes[1]] = "EPERM" // no socket(AF_UNIX) at all without the network
		}
		expect(t, fmt.Sprintf("sandboxed, AllowNetwork=%v", net), got, want)
	}
	if !m.ns {
		got, _, _ := startHelper(t, Spec{Unsafe: true}, probes...)
		expect(t, "unsafe", got, map[string]string{probes[0]: "ok", "kill:" + me: "ok", probes[1]: "ok", "kill-self": "ok"})
	}
}

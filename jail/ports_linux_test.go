package jail

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestListenPorts: a launcher opens a spec's ListenPorts on the loopback of
// its command's own network before the command starts, and hands them to the
// ports socket after naming the call; the command connects to them. Where the
// command would share the host's network, the launcher refuses.
func TestListenPorts(t *testing.T) {
	requireJail(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "ports.sock")
	ln, err := net.Listen("unixpacket", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type got struct {
		preamble, msg string
		fds           int
	}
	seen := make(chan got, 4)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf, oob := make([]byte, 256), make([]byte, 1024)
				n, _ := c.Read(buf)
				g := got{preamble: string(buf[:n])}
				n, oobn, _, _, _ := c.(*net.UnixConn).ReadMsgUnix(buf, oob)
				g.msg = string(buf[:n])
				var held []int
				if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
					for i := range msgs {
						fds, _ := unix.ParseUnixRights(&msgs[i])
						held = append(held, fds...)
					}
				}
				g.fds = len(held)
				seen <- g
				<-done // the listeners stay open while the command runs
				for _, fd := range held {
					unix.Close(fd)
				}
			}()
		}
	}()
	p := basePolicy(t)
	spec := Spec{Sandbox: p, PortsSocket: sock, PortsToken: "tok456", ListenPorts: []int{8000}}
	if !usePidNamespace() {
		// No network of the command's own: refused, as with the host's.
		spec.Argv, spec.Env = []string{testExe(t), "info:netns"}, []string{helperEnv + "=1"}
		tree, err := Start(testExe(t), &spec, tempFile(t), tempFile(t))
		if err == nil {
			_, err = tree.Wait()
		}
		if err == nil || !strings.Contains(err.Error(), "session ports") {
			t.Fatalf("ListenPorts without a network namespace: %v", err)
		}
		return
	}
	probes := []string{"tcp-connect:127.0.0.1:8000", "tcp-connect:127.0.0.1:8001"}
	res, _, _ := startHelper(t, spec, probes...)
	if res["tcp-connect:127.0.0.1:8000"] != "ok" || res["tcp-connect:127.0.0.1:8001"] != "ECONNREFUSED" {
		t.Errorf("the command's own loopback: %v", res)
	}
	select {
	case g := <-seen:
		if g.preamble != PortsPreamble+"tok456\n" || g.msg != "L" || g.fds != 2 {
			t.Errorf("the ports socket got %+v, want the preamble and L with 2 listeners", g)
		}
	case <-time.After(10 * time.Second):
		t.Error("no connection reached the ports socket")
	}
	// The whole network is the host's: the launcher refuses to take a port there.
	host := p
	host.AllowNetwork = true
	spec = Spec{Sandbox: host, PortsSocket: sock, PortsToken: "tok456", ListenPorts: []int{8000}, Argv: []string{testExe(t), "info:netns"}, Env: []string{helperEnv + "=1"}}
	tree, err := Start(testExe(t), &spec, tempFile(t), tempFile(t))
	if err == nil {
		_, err = tree.Wait()
	}
	if !errors.Is(err, ErrSandbox) || !strings.Contains(err.Error(), "shares the host's network") {
		t.Errorf("ListenPorts with the host's network: %v", err)
	}
}

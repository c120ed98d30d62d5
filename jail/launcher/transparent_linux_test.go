package launcher

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inNewNetNS runs f on a thread of its own in a new network namespace with
// loopback up; the thread is never unlocked, so it exits with its namespace.
func inNewNetNS(t testing.TB, f func() error) error {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a network namespace in the test process needs root")
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		if err := loopbackUp(); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

// TestTransparentRedirect: in a namespace set up for the transparent path, a
// TCP connection to any outside address arrives at the redirect listener with
// its original destination readable; loopback is not redirected; UDP out is
// refused. Positive control of the last: UDP on loopback is sent.
func TestTransparentRedirect(t *testing.T) {
	err := inNewNetNS(t, func() error {
		t0 := time.Now()
		tp, err := enterTransparent()
		if err != nil {
			return err
		}
		t.Logf("set-up took %v", time.Since(t0))
		defer tp.close()
		ln4 := os.NewFile(uintptr(tp.tcp[0]), "ln4")
		ln, err := net.FileListener(ln4)
		ln4.Close()
		if err != nil {
			return err
		}
		defer ln.Close()
		for _, dst := range []string{"93.184.215.14:443", "198.18.0.7:5432"} {
			c, err := net.DialTimeout("tcp", dst, 2*time.Second)
			if err != nil {
				t.Errorf("connect to %s: %v", dst, err)
				continue
			}
			s, err := ln.Accept()
			if err != nil {
				return err
			}
			sa, err := unix.GetsockoptIPv6Mreq(fdOf(t, s), unix.IPPROTO_IP, unix.SO_ORIGINAL_DST)
			if err != nil {
				t.Errorf("SO_ORIGINAL_DST of %s: %v", dst, err)
			} else if got := (&net.TCPAddr{IP: net.IP(sa.Multiaddr[4:8]), Port: int(sa.Multiaddr[2])<<8 | int(sa.Multiaddr[3])}).String(); got != dst {
				t.Errorf("original destination %s, want %s", got, dst)
			}
			s.Close()
			c.Close()
		}
		// Loopback is the namespace's own: not redirected.
		if c, err := net.DialTimeout("tcp", "127.0.0.1:9", time.Second); err == nil {
			c.Close()
			t.Errorf("127.0.0.1:9 was redirected")
		}
		for _, c := range []struct {
			dst  string
			sent bool
		}{{"8.8.8.8:9", false}, {"[2001:4860:4860::8888]:9", false}, {"127.0.0.1:9", true}} {
			u, err := net.Dial("udp", c.dst)
			if err == nil {
				_, err = u.Write([]byte("x"))
				u.Close()
			}
			if (err == nil) != c.sent {
				t.Errorf("udp to %s: %v, want sent %v", c.dst, err, c.sent)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fdOf(t testing.TB, c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	rc.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// BenchmarkEnterTransparent is what the transparent path adds to the start
// of a call with allowHosts: the rules, the listeners and the routes.
func BenchmarkEnterTransparent(b *testing.B) {
	for i := 0; i < b.N; i++ {
		err := inNewNetNS(b, func() error {
			b.StartTimer()
			tp, err := enterTransparent()
			b.StopTimer()
			tp.close()
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

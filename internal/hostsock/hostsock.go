// Package hostsock holds what the supervisor's socket servers for launchers
// (the network proxy, the session ports' relay) share: a seqpacket unix socket
// in a directory of the server user's alone, the descriptors a launcher
// passes, and joining two connections.
package hostsock

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
)

// Listen listens on a seqpacket unix socket name in a new directory below
// parent (0700, named prefix-PID-*, after this process, so that a later one
// can remove it if this one is killed: Listen removes those of processes that
// are gone first). The caller removes dir when done.
// A parent whose path would make the socket's longer than a unix socket address
// holds (108 bytes, a long TMPDIR) is replaced by /tmp.
func Listen(parent, prefix, name string) (dir string, ln net.Listener, err error) {
	// prefix-PID-RANDOM: the pid and MkdirTemp's suffix take at most 7+1+10.
	if len(parent)+1+len(prefix)+1+7+1+10+1+len(name) >= maxSocketPath {
		parent = "/tmp"
	}
	sweepStale(parent, prefix)
	dir, err = os.MkdirTemp(parent, fmt.Sprintf("%s-%d-", prefix, os.Getpid()))
	if err != nil {
		return "", nil, fmt.Errorf("making the directory of %s: %w", name, err)
	}
	ln, err = net.Listen("unixpacket", filepath.Join(dir, name))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("listening on %s: %w", name, err)
	}
	return dir, ln, nil
}

// maxSocketPath is the size of sun_path: a socket's path must be shorter.
const maxSocketPath = 108

// sweepStale removes the socket directories of autobox processes that are gone.
func sweepStale(parent, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"-*-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), prefix+"-%d-", &pid); err != nil || pid <= 0 {
			continue
		}
		if !procfs.Running(pid) {
			os.RemoveAll(d)
		}
	}
}

// PassedFDs are the descriptors of SCM_RIGHTS messages.
func PassedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if got, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// Splice copies between a and b both ways until both directions are done,
// passing on half-closes.
func Splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}

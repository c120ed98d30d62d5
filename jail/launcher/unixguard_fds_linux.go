package launcher

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// What the unix socket guard (unixguard_linux.go) reads the command's world
// through: descriptors the command thread opens before it restricts itself
// (its root, a /proc of its pid namespace, a sock_diag socket), and the small
// readers over them.

// readAt reads a small file below dirfd.
func readAt(dirfd int, p string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// kernelDev turns a device number as stat gives it into the kernel's own
// encoding (major << 20 | minor), which sock_diag reports.
func kernelDev(dev uint64) uint32 {
	return unix.Major(dev)<<20 | unix.Minor(dev)&0xfffff
}

func errnoOf(err error, fallback unix.Errno) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return fallback
}

// printable is s with bytes outside printable ASCII escaped, for a report.
func printable(s []byte) string {
	q := strconv.QuoteToASCII(string(s))
	return q[1 : len(q)-1]
}

// readDirNames lists the directory at p below dirfd.
func readDirNames(dirfd int, p string) ([]string, error) {
	fd, err := unix.Openat(dirfd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	return f.Readdirnames(-1)
}

// guardFDs are the descriptors the command thread opens for the guard before
// it restricts itself; close releases those not handed over.
type guardFDs struct {
	root, proc, diag int
	pidNS            bool // proc is of the call's own pid namespace
}

// openGuardFDs opens, on the command thread in its root and network, what the
// guard needs: its root, a /proc of its pid namespace and a sock_diag socket.
func openGuardFDs() (guardFDs, error) {
	g := guardFDs{root: -1, proc: -1, diag: -1, pidNS: os.Getpid() == 1}
	var err error
	if g.root, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return g, fmt.Errorf("opening the command's root: %w", err)
	}
	if g.pidNS {
		if g.proc = int(sealedProc.Swap(-1)); g.proc < 0 {
			g.proc, err = detachedProc()
		}
	} else if g.proc, err = unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		err = fmt.Errorf("opening /proc: %w", err)
	}
	if err != nil {
		g.close()
		return g, err
	}
	if g.diag, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG); err != nil {
		g.close()
		return g, fmt.Errorf("opening a sock_diag socket: %w", err)
	}
	return g, nil
}

// sealedProc is the detached proc a private root made before it sealed
// itself (see privateRoot.seal), -1 if none: the guard's.
var sealedProc atomic.Int32

func init() { sealedProc.Store(-1) }

// detachedProc mounts a proc of the calling thread's pid namespace (the
// command's) that is attached nowhere: the guard reads it by descriptor,
// whether or not the command's root has a /proc.
func detachedProc() (int, error) {
	fs, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen(proc): %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("fsconfig(proc): %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsmount(proc): %w", err)
	}
	return m, nil
}

func (g guardFDs) close() {
	for _, fd := range []int{g.root, g.proc, g.diag} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

//go:build linux

package xfstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

func unavailable(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUnavailable, fmt.Sprintf(format, a...))
}

func checkRoot() error {
	if os.Geteuid() != 0 {
		return unavailable("mounting needs root")
	}
	return nil
}

// MountXFS creates a sparse image of size bytes in dir, formats it as XFS with
// reflink=1 and loop-mounts it at dir/mnt. unmount undoes both.
func MountXFS(dir string, size int64) (mnt string, unmount func() error, err error) {
	if err := checkRoot(); err != nil {
		return "", nil, err
	}
	mkfs, err := exec.LookPath("mkfs.xfs")
	if err != nil {
		return "", nil, unavailable("mkfs.xfs not found (install xfsprogs)")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return "", nil, unavailable("no loop device support: %v", err)
	}
	img := filepath.Join(dir, "xfs.img")
	mnt = filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return "", nil, err
	}
	f, err := os.Create(img)
	if err != nil {
		return "", nil, err
	}
	err = f.Truncate(size)
	f.Close()
	if err != nil {
		return "", nil, err
	}
	if out, err := exec.Command(mkfs, "-q", "-m", "reflink=1", img).CombinedOutput(); err != nil {
		return "", nil, unavailable("mkfs.xfs: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		return "", nil, unavailable("mount -o loop: %v: %s", err, out)
	}
	return mnt, func() error {
		err := umount(mnt)
		os.Remove(img)
		return err
	}, nil
}

// MountTmpfs mounts a fresh tmpfs at dir/tmpfs; tmpfs has no FICLONE, so it exercises
// the EOPNOTSUPP path whatever filesystem the temp directory is on.
func MountTmpfs(dir string) (mnt string, unmount func() error, err error) {
	return MountTmpfsSized(filepath.Join(dir, "tmpfs"), 256<<20)
}

// MountTmpfsSized mounts a tmpfs of size bytes at mnt, made if missing: a small one
// runs out of space on purpose.
func MountTmpfsSized(mnt string, size int64) (string, func() error, error) {
	if err := checkRoot(); err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return "", nil, err
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return "", nil, unavailable("mount tmpfs: %v", err)
	}
	return mnt, func() error { return umount(mnt) }, nil
}

func umount(mnt string) error {
	if err := unix.Unmount(mnt, 0); err != nil {
		// Something still has a file open (a killed child); detach so the test ends.
		if lerr := unix.Unmount(mnt, unix.MNT_DETACH); lerr != nil {
			return fmt.Errorf("unmount %s: %w", mnt, err)
		}
	}
	return nil
}

// FIEMAP ABI (linux/fiemap.h); x/sys/unix does not define it.
const (
	fsIOCFiemap        = 0xC020660B // _IOWR('f', 11, struct fiemap)
	fiemapFlagSync     = 0x1
	fiemapExtentShared = 0x2000
	maxExtents         = 128
)

type fiemapExtent struct {
	Logical, Physical, Length uint64
	_                         [2]uint64
	Flags                     uint32
	_                         [3]uint32
}

type fiemapRequest struct {
	Start, Length                   uint64
	Flags, MappedExtents, ExtentCnt uint32
	_                               uint32
	Extents                         [maxExtents]fiemapExtent
}

// SharedExtents reports how many of path's first extents are shared with another file
// (FIEMAP_EXTENT_SHARED) out of how many it has.
func SharedExtents(path string) (shared, total int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	req := fiemapRequest{Length: ^uint64(0), Flags: fiemapFlagSync, ExtentCnt: maxExtents}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIOCFiemap, uintptr(unsafe.Pointer(&req))); errno != 0 {
		return 0, 0, fmt.Errorf("FIEMAP %s: %w", path, errno)
	}
	for _, e := range req.Extents[:req.MappedExtents] {
		if e.Flags&fiemapExtentShared != 0 {
			shared++
		}
	}
	return shared, int(req.MappedExtents), nil
}

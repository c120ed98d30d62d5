package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
)

// cloneAt creates dirfd/name with permission bits perm (less the umask; hasPerm says
// whether that left them whole) as a copy-on-write clone of src with FICLONE.
func cloneAt(src, dirfd int, name string, perm uint32) (fd int, hasPerm bool, err error) {
	if fd, err = createAt(dirfd, name, perm); err != nil {
		return -1, false, err
	}
	if err := unix.IoctlFileClone(fd, src); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, false, err
	}
	return fd, umaskKeeps(perm), nil
}

var umask = sync.OnceValues(func() (uint32, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return uint32(m), err == nil
		}
	}
	return 0, false
})

// umaskKeeps reports whether a file created with perm really has perm, so the fchmod
// after creating it can be skipped. The umask is read once from /proc (reading it with
// umask(2) would change it for a moment under other goroutines); autobox never changes it.
func umaskKeeps(perm uint32) bool {
	m, ok := umask()
	return ok && perm&m == 0
}

// syncFS flushes the whole filesystem holding fd: one call instead of an fsync per
// cloned file at the end of create.
func syncFS(fd int) error { return unix.Syncfs(fd) }

// renameNoReplace renames like renameat but fails with EEXIST if the target exists, so
// a file that appeared on the host after the recheck is never clobbered.
func renameNoReplace(olddir int, oldname string, newdir int, newname string) error {
	return unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_NOREPLACE)
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirents lists directory fd (freshly opened, at offset 0) in directory order,
// with the types getdents reports (0 when the filesystem does not say).
func readDirents(fd int) ([]dirent, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var out []dirent
	for {
		n, err := unix.Getdents(fd, *bp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return out, err
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name NUL-terminated.
		// Names are cut from one string per read, not allocated one by one.
		raw := (*bp)[:n]
		chunk := string(raw)
		for off := 0; off < n; {
			reclen := int(binary.NativeEndian.Uint16(raw[off+16:]))
			if reclen < 20 || off+reclen > n {
				return out, unix.EIO
			}
			name := chunk[off+19 : off+reclen]
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if name != "." && name != ".." {
				out = append(out, dirent{name, dtypeMode[raw[off+18]]})
			}
			off += reclen
		}
	}
}

var dtypeMode = [...]uint32{
	unix.DT_REG: unix.S_IFREG, unix.DT_DIR: unix.S_IFDIR, unix.DT_LNK: unix.S_IFLNK, unix.DT_FIFO: unix.S_IFIFO,
	unix.DT_SOCK: unix.S_IFSOCK, unix.DT_CHR: unix.S_IFCHR, unix.DT_BLK: unix.S_IFBLK, 255: 0,
}

// renameExchange swaps two entries atomically (any types, directories included).
func renameExchange(olddir int, oldname string, newdir int, newname string) error {
	return unix.Renameat2(olddir, oldname, newdir, newname, unix.RENAME_EXCHANGE)
}

// mountOf names where the filesystem holding r is mounted: the mount of r's device
// (from /proc/self/mountinfo) that is the longest prefix of r's path.
func mountOf(r *root) string {
	var st unix.Stat_t
	if unix.Fstat(r.fd, &st) != nil {
		return ""
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	dev := fmt.Sprintf("%d:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	best := ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[2] != dev {
			continue
		}
		mnt := procfs.UnescapeMount(f[4])
		if (r.path == mnt || strings.HasPrefix(r.path, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) > len(best) {
			best = mnt
		}
	}
	return best
}

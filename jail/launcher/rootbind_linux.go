package launcher

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// Binding the host's paths into a private root (see privateRoot): each path of a
// policy is made to exist there as it does on the host, the symbolic links on
// the way made again and what the path finally names bound from the host
// through a descriptor opened with no link followed, so that a link swapped in
// since the path was checked cannot redirect a bind.

// maxLinks bounds the symlinks followed for one path, as the kernel does.
const maxLinks = 40

// materialize makes p (absolute and clean; it may pass through symlinks) exist
// in the private root as it does on the host: each symlink on the way is made
// again, and what p finally names is bound from the host. A path that does
// not exist on the host is skipped, as Landlock skips it. With noFollow
// (policy.Sandbox.NoFollow), a path to bind that passes through a symlink is
// refused instead: it was checked free of them, so the link is newer than the
// check.
func (r *privateRoot) materialize(p string, kind bindKind, noFollow bool) error {
	for hops := 0; hops <= maxLinks; hops++ {
		link, rest, err := r.firstLink(p)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil
		}
		if err != nil {
			return err
		}
		if link != "" && noFollow && kind != linkOnly {
			return fmt.Errorf("%w: %s goes through the symbolic link %s now, which it did not when it was checked", confine.ErrPolicy, p, link)
		}
		if link == "" {
			if kind == linkOnly {
				return nil
			}
			return r.bind(p, kind)
		}
		target, err := readlinkAt(r.oldRoot, link[1:])
		if err != nil {
			return fmt.Errorf("reading link %s: %w", link, err)
		}
		if err := r.makeLink(link, target); err != nil {
			return err
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(link), target)
		}
		p = path.Join(target, rest)
	}
	return fmt.Errorf("%s: %w", p, unix.ELOOP)
}

// firstLink returns the first prefix of p that is a symlink on the host, and
// the rest of p after it; link is "" if there is none.
func (r *privateRoot) firstLink(p string) (link, rest string, err error) {
	if p == "/" {
		return "", "", nil
	}
	parts := strings.Split(p[1:], "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		var st unix.Stat_t
		if err := unix.Fstatat(r.oldRoot, prefix, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return "", "", err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return "/" + prefix, strings.Join(parts[i+1:], "/"), nil
		}
	}
	return "", "", nil
}

// makeLink makes the symlink link -> target in the private root, unless
// something is there already (inside a bound directory, the host's own link).
func (r *privateRoot) makeLink(link, target string) error {
	var st unix.Stat_t
	if unix.Lstat(link, &st) == nil {
		return nil
	}
	if err := mkdirAll(path.Dir(link)); err != nil {
		return err
	}
	if err := unix.Symlink(target, link); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("symlink %s: %w", link, err)
	}
	r.links = append(r.links, madeLink{link, target})
	r.watchAbove(link)
	return nil
}

// bind binds the host's p (free of symlinks) at p, with kind's mount flags.
func (r *privateRoot) bind(p string, kind bindKind) error {
	if k, ok := r.bound[p]; ok && k == kind {
		return nil // bound already, as asked (else bound again, on top)
	}
	switch p {
	case "/":
		// The whole host, read-only (a read-write "/" cannot pass validation):
		// each entry of its root, but this root's own /proc and /dev.
		return r.bindTopLevel(kind)
	case "/proc":
		r.bound[p] = kind
		return mountProc()
	case syspaths.CgroupTree:
		r.bound[p] = kind
		return r.mountCgroupView() // cgroupview_linux.go: the tree's own alone
	}
	if kind == bindDevice && strings.HasPrefix(p, "/dev/pts/") {
		return r.bindAt(p, wire.TerminalPath, kind) // rootdev_linux.go
	}
	return r.bindAt(p, p, kind)
}

// bindTmp binds a directory of the call's scratch dir (free of symlinks),
// wire.TmpDirName, at /tmp, unless the policy gives /tmp (or all of "/") itself:
// tools that write to /tmp then write into the call's own directory, which
// goes with the call. It comes before the paths inside /tmp (the scratch
// dir's own name among them), whose mount points are then made in it: a
// directory of its own, so that they do not show in the scratch dir (the
// command's HOME) itself.
func (r *privateRoot) bindTmp(p *policy.Sandbox) error {
	if p.Tmp == "" || r.bound["/tmp"] == bindRW {
		return nil
	}
	for _, l := range [][]string{p.ReadOnly, p.ReadWrite} {
		for _, q := range l {
			if q == "/" || q == "/tmp" {
				return nil
			}
		}
	}
	dir := path.Join(p.Tmp, wire.TmpDirName)
	if err := unix.Mkdirat(r.oldRoot, dir[1:], 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("making the call's /tmp: %w", err)
	}
	return r.bindAt(dir, "/tmp", bindRW)
}

// bindAt binds the host's src (free of symlinks) at dst in the private root.
func (r *privateRoot) bindAt(p, dst string, kind bindKind) error {
	// Opened without following any link: p was checked link-free above, and a
	// link swapped in since then must not redirect the bind.
	src, err := unix.Openat2(r.oldRoot, p[1:], &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH,
	})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%w: %s goes through a symbolic link now, which it did not when it was checked", confine.ErrPolicy, p)
	}
	if err != nil {
		return fmt.Errorf("opening %s to bind it: %w", p, err)
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	if err := mountPoint(dst, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", p, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount %s: %w", dst, err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	switch kind {
	case bindRO:
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	case bindRW:
		attr.Attr_clr = unix.MOUNT_ATTR_RDONLY
	case bindDevice:
		// Writes to a device ignore a read-only mount; chmod and chown of it do not.
		attr = &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID, Attr_clr: unix.MOUNT_ATTR_NODEV}
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, dst, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return fmt.Errorf("setting the flags of %s: %w", dst, err)
	}
	r.bound[dst] = kind
	r.binds = append(r.binds, boundFile{p, confine.IDOf(&st)})
	r.watchAbove(p)
	return nil
}

// bindTopLevel binds every entry of the host's root, but /proc and /dev.
func (r *privateRoot) bindTopLevel(kind bindKind) error {
	r.bound["/"] = kind
	dir, err := os.Open(oldRootDir)
	if err != nil {
		return fmt.Errorf("listing the host's root: %w", err)
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return fmt.Errorf("listing the host's root: %w", err)
	}
	sort.Strings(names)
	for _, name := range names {
		if name == "proc" || name == "dev" || "/"+name == oldRootDir {
			continue
		}
		// The host's own names (/bin -> usr/bin): only root can change them.
		if err := r.materialize("/"+name, kind, false); err != nil {
			return err
		}
	}
	return nil
}

// mountProc mounts a proc of the calling thread's pid namespace at /proc.
func mountProc() error {
	if err := mkdirAll("/proc"); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	return nil
}

// mountPoint makes an empty directory or file at p to bind onto, unless
// something is there already (inside a bound directory).
func mountPoint(p string, dir bool) error {
	var st unix.Stat_t
	if unix.Lstat(p, &st) == nil {
		return nil
	}
	if dir {
		return mkdirAll(p)
	}
	if err := mkdirAll(path.Dir(p)); err != nil {
		return err
	}
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("creating mount point %s: %w", p, err)
	}
	return unix.Close(fd)
}

// mkdirAll makes p and its parents in the private root.
func mkdirAll(p string) error {
	if p == "/" {
		return nil
	}
	var st unix.Stat_t
	if unix.Lstat(p, &st) == nil {
		return nil
	}
	if err := mkdirAll(path.Dir(p)); err != nil {
		return err
	}
	if err := unix.Mkdir(p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	return nil
}

func readlinkAt(dirfd int, p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, p, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

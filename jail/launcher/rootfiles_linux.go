package launcher

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"golang.org/x/sys/unix"
)

// Files a private root makes for the call, bound read-only over the host's:
//
//   - /etc/passwd and /etc/group name root, nobody and the command's own user
//     (the user's name, home and shell, and primary group, as the host has
//     them), so that whoami, ssh-keygen, PostgreSQL and getpwuid(3) work and
//     nothing else of the host's accounts is shown;
//   - in a private network (allowHosts), /etc/hosts with localhost alone and
//     /etc/resolv.conf naming the call's own resolver (names resolve at the
//     proxy), in place of the host's.
//
// Each is written to the root's tmpfs and bound over the file the command
// opens by that name (through links: /etc/resolv.conf -> ../run/...), then
// its staging name is removed; the host's file is untouched. A file the host
// replaces (rename over /etc/passwd) detaches the bind in the command's view:
// the host's new file then has no Landlock rule and cannot be read (see
// confine's hidden_linux.go), and a pooled launcher's root is built again (stale).

// stagingDir holds files while they are bound, in the root's tmpfs.
const stagingDir = "/.autobox-files"

// placeFile makes content the file the command finds at name: bound over
// what name leads to, or made where that is missing in the root's own tmpfs.
// It returns the path placed (name, or where its links lead).
func (r *privateRoot) placeFile(name string, content []byte) (string, error) {
	target, err := r.followLinks(name)
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Lstat(target, &st); errors.Is(err, unix.ENOENT) {
		if err := mkdirAll(path.Dir(target)); err != nil {
			return "", err
		}
		if err := os.WriteFile(target, content, 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", target, err)
		}
		r.placed = append(r.placed, target)
		return target, nil
	}
	if err := mkdirAll(stagingDir); err != nil {
		return "", err
	}
	stage := path.Join(stagingDir, strconv.Itoa(len(r.placed)))
	if err := os.WriteFile(stage, content, 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", stage, err)
	}
	defer unix.Unlink(stage)
	tree, err := unix.OpenTree(unix.AT_FDCWD, stage, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("open_tree %s: %w", stage, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", fmt.Errorf("binding the call's %s: %w", target, err)
	}
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if err := unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_SYMLINK_NOFOLLOW, attr); err != nil {
		return "", fmt.Errorf("setting the flags of %s: %w", target, err)
	}
	r.placed = append(r.placed, target)
	return target, nil
}

// followLinks resolves the symbolic links of name in the root being built,
// as the command will: the path of the file it opens by that name.
func (r *privateRoot) followLinks(name string) (string, error) {
	p := name
	for hops := 0; hops <= maxLinks; hops++ {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		link := -1
		for i := range parts {
			var st unix.Stat_t
			prefix := "/" + strings.Join(parts[:i+1], "/")
			if err := unix.Lstat(prefix, &st); err != nil {
				return p, nil // missing from here on: made as it is
			}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				link = i
				break
			}
		}
		if link < 0 {
			return p, nil
		}
		prefix := "/" + strings.Join(parts[:link+1], "/")
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlink(prefix, buf)
		if err != nil {
			return "", fmt.Errorf("reading link %s: %w", prefix, err)
		}
		target := string(buf[:n])
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(prefix), target)
		}
		p = path.Join(append([]string{target}, parts[link+1:]...)...)
	}
	return "", fmt.Errorf("%s: %w", name, unix.ELOOP)
}

// identityFiles makes the call's /etc/passwd and /etc/group, once /etc is
// bound (and again after a reset).
func (r *privateRoot) identityFiles() error {
	if _, etc := r.bound["/etc"]; r.identity || !etc {
		return nil
	}
	uid, gid := os.Getuid(), os.Getgid()
	if confine.CommandUID() >= 0 && os.Geteuid() == 0 {
		uid, gid = confine.CommandUID(), confine.CommandUID()
	}
	hostPasswd, _ := r.hostFile("etc/passwd")
	hostGroup, _ := r.hostFile("etc/group")
	passwd, group := identity(uid, gid, hostPasswd, hostGroup)
	if _, err := r.placeFile("/etc/passwd", passwd); err != nil {
		return err
	}
	if _, err := r.placeFile("/etc/group", group); err != nil {
		return err
	}
	r.identity = true
	return nil
}

// hostFile reads a file of the host's root (relative to it), before seal.
func (r *privateRoot) hostFile(rel string) ([]byte, error) {
	fd, err := unix.Openat(r.oldRoot, rel, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// identity is the passwd and group of a command that runs as uid and gid:
// root, nobody and, if it is neither, its own user as the host names it
// (HOME stays the call's scratch dir: programs that read it find that).
func identity(uid, gid int, hostPasswd, hostGroup []byte) (passwd, group []byte) {
	var p, g bytes.Buffer
	p.WriteString("root:x:0:0:root:/root:/bin/sh\n")
	g.WriteString("root:x:0:\n")
	if uid != 0 && uid != confine.UnprivilegedID {
		f := entry(hostPasswd, 2, uid)
		name, gecos, home, shell := "user", "", "/nonexistent", "/bin/sh"
		if len(f) >= 7 {
			name, gecos, home, shell = f[0], f[4], f[5], f[6]
		}
		fmt.Fprintf(&p, "%s:x:%d:%d:%s:%s:%s\n", name, uid, gid, gecos, home, shell)
		if gid != 0 && gid != confine.UnprivilegedID {
			gname := name
			if gf := entry(hostGroup, 2, gid); len(gf) >= 1 {
				gname = gf[0]
			}
			fmt.Fprintf(&g, "%s:x:%d:\n", gname, gid)
		}
	}
	if !inUserNS {
		fmt.Fprintf(&g, "tty:x:%d:\n", ttyGID) // the group of the call's terminals
	}
	p.WriteString("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
	g.WriteString("nogroup:x:65534:\n")
	return p.Bytes(), g.Bytes()
}

// entry returns the fields of the first line of a passwd or group file whose
// field idx is id, or nil.
func entry(file []byte, idx, id int) []string {
	sc := bufio.NewScanner(bytes.NewReader(file))
	want := strconv.Itoa(id)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) > idx && f[idx] == want && !strings.ContainsAny(sc.Text(), "\x00") {
			return f
		}
	}
	return nil
}

// netFileNames are the files netFiles makes.
var netFileNames = []string{"/etc/hosts", "/etc/resolv.conf"}

// netFiles gives a command in a private network the name service it has:
// localhost, and a resolver at 127.0.0.1 (names resolve at the proxy, or at
// the transparent path's resolver). It returns the paths placed, for the
// command's Landlock rules.
func (r *privateRoot) netFiles() ([]string, error) {
	var placed []string
	for i, content := range []string{
		"127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
		"# autobox: no DNS inside; names resolve at the proxy (HTTP_PROXY, ALL_PROXY)\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n",
	} {
		p, err := r.placeFile(netFileNames[i], []byte(content))
		if err != nil {
			return nil, err
		}
		placed = append(placed, p)
	}
	return placed, nil
}

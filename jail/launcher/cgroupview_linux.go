package launcher

import (
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// A command's view of its cgroups (the launcher's side): what a policy that
// reads syspaths.CgroupTree gets. Runtimes size their heaps and thread pools
// from the cgroup they run in, as in a container; a command must find its own
// limits there, and nothing of the host's other cgroups (other users'
// services, the server's, other calls').
//
// Its own cgroups are those the server made for its tree (named by
// cgroupName, with the server's pid): the launcher's memory cgroup, the
// command's pids, cpu and cpuacct cgroups (cgroup v1, joined by the command
// thread), the launcher's v2 cgroup. A hierarchy in which the tree is in a
// cgroup it shares with the server (or the host's root) is never shown.
//
// In a private root (mountCgroupView): the command thread enters a cgroup
// namespace of its own (CLONE_NEWCGROUP), whose root in each hierarchy is the
// cgroup the thread is in; each hierarchy in which that cgroup is the tree's
// own is mounted read-only where the host has it (cgroup v2 at
// /sys/fs/cgroup, or v1's /sys/fs/cgroup/<controllers> and v2 at
// /sys/fs/cgroup/unified beside them), so the command finds its cgroups as
// the root of their hierarchies, as in a container: /proc/self/cgroup says
// "/", mountinfo names the mounts' root "/". Read-only mounts refuse every
// write (EROFS), whatever the command's uid; seccomp refuses mount, umount,
// setns and unshare, so they stay so.
//
// Without a private root (no namespaces, or a root that could not be built):
// Landlock reads of the own cgroups' directories on the host (ownCgroupRules)
// in place of the policy's /sys/fs/cgroup; the command finds them by the
// paths /proc/self/cgroup gives, and lists no other cgroup.

// ownCgroup is one hierarchy in which the calling thread is in a cgroup the
// server made for its tree.
type ownCgroup struct {
	controllers string // "memory", "cpu,cpuacct"; "" for the v2 hierarchy
	path        string // the cgroup in its hierarchy, as /proc/thread-self/cgroup says
}

// ownCgroups are the calling thread's own cgroups (see ownCgroup), and
// whether the host has v1 hierarchies (then v2 is mounted at
// /sys/fs/cgroup/unified, if at all).
func ownCgroups() (own []ownCgroup, v1 bool) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return nil, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		named := strings.HasPrefix(parts[1], "name=")
		if parts[1] != "" && !named {
			v1 = true
		}
		if named || !madeForTree(parts[2]) {
			continue
		}
		own = append(own, ownCgroup{controllers: parts[1], path: parts[2]})
	}
	return own, v1
}

// madeForTree reports whether the cgroup p (a path in its hierarchy) was made
// by an autobox server for one launcher or command: its name is cgroupName's,
// and, where the launcher can name its parent (no pid namespace), the pid in
// it is the parent's (a server that itself runs in a cgroup another server
// made shows none of it to its commands).
func madeForTree(p string) bool {
	rest, ok := strings.CutPrefix(path.Base(p), wire.CgroupPrefix)
	if !ok {
		return false
	}
	owner, id, ok := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(owner)
	if !ok || err != nil || pid <= 0 || id == "" {
		return false
	}
	ppid := os.Getppid()
	return ppid == 0 || ppid == pid
}

// cgroupMountFlags: read-only, and nothing in it runs, is a device or raises
// privileges.
const cgroupMountFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// mountCgroupView shows the tree's own cgroups at syspaths.CgroupTree in the
// private root (see above); nothing where it has none, or where the kernel
// refuses the namespace or a mount (the command then sees less, never more).
func (r *privateRoot) mountCgroupView() error {
	own, v1 := ownCgroups()
	if len(own) == 0 {
		return nil
	}
	if unix.Unshare(unix.CLONE_NEWCGROUP) != nil {
		return nil
	}
	for _, c := range own {
		dst, fstype, data := syspaths.CgroupTree, "cgroup2", ""
		switch {
		case c.controllers != "":
			dst, fstype, data = path.Join(syspaths.CgroupTree, c.controllers), "cgroup", c.controllers
		case v1:
			dst = path.Join(syspaths.CgroupTree, "unified")
		}
		if err := mkdirAll(dst); err != nil {
			return err
		}
		if unix.Mount("cgroup", dst, fstype, cgroupMountFlags, data) != nil {
			continue
		}
		// Co-mounted controllers (cpu,cpuacct) by each name too, as hosts
		// link them.
		if ctls := strings.Split(c.controllers, ","); len(ctls) > 1 {
			for _, ctl := range ctls {
				_ = unix.Symlink(c.controllers, path.Join(syspaths.CgroupTree, ctl))
			}
		}
	}
	return nil
}

// ownCgroupRules narrows sb's read of syspaths.CgroupTree, for a command
// without a private root, to the directories of the calling thread's own
// cgroups on the host: the rest of the host's tree stays unreadable.
func ownCgroupRules(sb *policy.Sandbox) {
	i := slices.Index(sb.ReadOnly, syspaths.CgroupTree)
	if i < 0 {
		return
	}
	ro := slices.Delete(slices.Clone(sb.ReadOnly), i, i+1)
	own, v1 := ownCgroups()
	for _, c := range own {
		mount := path.Join(syspaths.CgroupTree, c.controllers)
		if c.controllers == "" && v1 {
			mount = path.Join(syspaths.CgroupTree, "unified")
		}
		ro = append(ro, path.Join(mount, c.path))
	}
	sb.ReadOnly = ro
}

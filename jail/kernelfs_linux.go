package jail

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
	"github.com/autobox-dev/autobox/policy"
)

// The kernel's pseudo-filesystems are views of the kernel, not data, and no
// command may write one. Read-write, /proc/sys changes the kernel's settings
// (a root server's command is uid 0, which the sysctl files let write without
// a capability: kernel.core_pattern names a program the kernel runs as root
// on the host), and a cgroup filesystem lets the command move itself out of
// the cgroups that hold its limits (pids, memory, CPU time) into any other.
// So a read-write path of a sandbox that is on one, or holds one mounted below
// it (/sys holds /sys/fs/cgroup), is refused before anything starts; read-only
// they stay (a command reads them under its own Landlock domain and pid
// namespace). Which filesystem a path is on comes from this process's mount
// table: the mount of the longest mount point that holds it.

// kernelFSTypes are the filesystem types, as the mount table names them, that
// no command may write.
var kernelFSTypes = map[string]bool{
	"proc": true, "sysfs": true, "cgroup": true, "cgroup2": true, "debugfs": true, "tracefs": true,
	"securityfs": true, "bpf": true, "configfs": true, "devpts": true, "pstore": true, "efivarfs": true,
	"selinuxfs": true, "smackfs": true, "apparmorfs": true, "fusectl": true, "binfmt_misc": true,
	"mqueue": true, "nsfs": true, "nfsd": true, "rpc_pipefs": true,
}

// refuseKernelFSWrites refuses a sandbox whose read-write paths are on a
// kernel pseudo-filesystem or hold one.
func refuseKernelFSWrites(sb *policy.Sandbox) error { return KernelFSWrites(sb.ReadWrite) }

// KernelFSWrites refuses (ErrPolicy) read-write paths that are on a kernel
// pseudo-filesystem or hold one; every start checks its sandbox so, and a
// caller may check a call's paths before anything else, so that this is what
// a refusal names.
func KernelFSWrites(readWrite []string) error {
	if len(readWrite) == 0 {
		return nil
	}
	mounts, err := mountTable()
	if err != nil {
		return fmt.Errorf("%w: reading the mount table: %w", ErrSandbox, err)
	}
	for _, p := range readWrite {
		on, best := "", ""
		for _, m := range mounts {
			switch {
			case policy.Within(p, m.point) && len(m.point) >= len(best):
				on, best = m.fstype, m.point
			case kernelFSTypes[m.fstype] && policy.Within(m.point, p):
				return fmt.Errorf("%w: read-write %s holds %s, the kernel's %s filesystem, which no command may write (it would change the kernel's settings, or leave the cgroups that hold its limits): mount it read-only, or a directory that does not hold it", ErrPolicy, p, m.point, m.fstype)
			}
		}
		if kernelFSTypes[on] {
			return fmt.Errorf("%w: read-write %s is on the kernel's %s filesystem, which no command may write (it would change the kernel's settings, or leave the cgroups that hold its limits): mount it read-only", ErrPolicy, p, on)
		}
	}
	return nil
}

type mountEntry struct{ point, fstype string }

// mounts keeps this process's mount table, read again only when the kernel
// says it changed: /proc/self/mountinfo signals POLLPRI then, so a call pays a
// poll of no time, not a read of the table.
var mounts struct {
	mu    sync.Mutex
	f     *os.File
	table []mountEntry
}

// mountTable is this process's mounts, from /proc/self/mountinfo.
func mountTable() ([]mountEntry, error) {
	mounts.mu.Lock()
	defer mounts.mu.Unlock()
	if mounts.f != nil {
		fds := []unix.PollFd{{Fd: int32(mounts.f.Fd()), Events: unix.POLLPRI}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			return mounts.table, nil
		}
	} else {
		f, err := os.Open("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		mounts.f = f
	}
	// Read from the start: that also re-arms the change signal.
	b, err := io.ReadAll(io.NewSectionReader(mounts.f, 0, 1<<30))
	if err != nil {
		mounts.f.Close()
		mounts.f = nil
		return nil, err
	}
	var out []mountEntry
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root point options [optional...] - fstype source super
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		out = append(out, mountEntry{point: procfs.UnescapeMount(f[4]), fstype: g[0]})
	}
	mounts.table = out
	return out, nil
}

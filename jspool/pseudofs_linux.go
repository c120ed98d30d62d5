package jspool

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Kernel pseudo-filesystems, which the bridge does not serve. Their files are
// views of processes and of the kernel, not data: a read-only mount of /proc
// would hand execute_js the server's own environment, memory map and
// descriptors (/proc/self is whoever reads, and the bridge reads as the
// server), and every process of its user; /sys, debugfs and tracefs show the
// kernel and the machine, cgroupfs the server's limits. A command of
// exec_command reads them under its own Landlock domain and pid namespace;
// the bridge would read them as the server. Checked by the f_type of the
// filesystem an opened file or directory is on, so a mount of a directory
// that holds such a filesystem (/ itself) is caught at each file, whatever
// path or link led there.
var pseudoFilesystems = map[int64]string{
	unix.PROC_SUPER_MAGIC:    "proc",
	unix.SYSFS_MAGIC:         "sysfs",
	unix.DEBUGFS_MAGIC:       "debugfs",
	unix.TRACEFS_MAGIC:       "tracefs",
	unix.SECURITYFS_MAGIC:    "securityfs",
	unix.CGROUP_SUPER_MAGIC:  "cgroup",
	unix.CGROUP2_SUPER_MAGIC: "cgroup2",
	unix.BPF_FS_MAGIC:        "bpf",
	0x62656570:               "configfs",
	unix.DEVPTS_SUPER_MAGIC:  "devpts",
	unix.PSTOREFS_MAGIC:      "pstore",
	unix.EFIVARFS_MAGIC:      "efivarfs",
	unix.SELINUX_MAGIC:       "selinuxfs",
	unix.SMACK_MAGIC:         "smackfs",
	unix.AAFS_MAGIC:          "apparmorfs",
	0x65735543:               "fusectl",
	unix.BINFMTFS_MAGIC:      "binfmt_misc",
	0x19800202:               "mqueue",
	unix.NSFS_MAGIC:          "nsfs",
	unix.ANON_INODE_FS_MAGIC: "anon_inodefs",
	0x6e667364:               "nfsd",
	0x67596969:               "rpc_pipefs",
}

var errNoConn = errors.New("no descriptor")

// pseudoFS returns the name of the kernel pseudo-filesystem f is on, or "".
// A file whose filesystem cannot be told is refused as one.
func pseudoFS(f *os.File) string {
	var st unix.Statfs_t
	err := errNoConn
	if c, cerr := f.SyscallConn(); cerr == nil {
		// Not f.Fd(), which would make the descriptor blocking.
		if cerr = c.Control(func(fd uintptr) { err = unix.Fstatfs(int(fd), &st) }); cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return pseudoFilesystems[int64(st.Type)]
}

// pseudoFSAt is pseudoFS for a path, followed.
func pseudoFSAt(p string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return ""
	}
	return pseudoFilesystems[int64(st.Type)]
}

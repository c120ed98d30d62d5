//go:build linux && (amd64 || arm64)

package seccomp

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNumbersMatchXSys checks the hand-written table of the architecture the
// test runs on against x/sys, which is generated from the kernel headers.
func TestNumbersMatchXSys(t *testing.T) {
	a, _ := ArchFor(runtime.GOARCH)
	want := map[string]uint32{
		"ioctl": unix.SYS_IOCTL, "socketpair": unix.SYS_SOCKETPAIR, "socket": unix.SYS_SOCKET,
		"clone": unix.SYS_CLONE, "execve": unix.SYS_EXECVE, "ptrace": unix.SYS_PTRACE,
		"personality": unix.SYS_PERSONALITY, "pivot_root": unix.SYS_PIVOT_ROOT, "prctl": unix.SYS_PRCTL,
		"chroot": unix.SYS_CHROOT, "acct": unix.SYS_ACCT, "mount": unix.SYS_MOUNT,
		"umount2": unix.SYS_UMOUNT2, "swapon": unix.SYS_SWAPON, "swapoff": unix.SYS_SWAPOFF,
		"reboot": unix.SYS_REBOOT, "init_module": unix.SYS_INIT_MODULE, "delete_module": unix.SYS_DELETE_MODULE,
		"quotactl": unix.SYS_QUOTACTL, "lookup_dcookie": unix.SYS_LOOKUP_DCOOKIE,
		"kexec_load": unix.SYS_KEXEC_LOAD, "add_key": unix.SYS_ADD_KEY,
		"request_key": unix.SYS_REQUEST_KEY, "keyctl": unix.SYS_KEYCTL,
		"unshare": unix.SYS_UNSHARE, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"fanotify_init": unix.SYS_FANOTIFY_INIT, "name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
		"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT, "setns": unix.SYS_SETNS,
		"process_vm_readv": unix.SYS_PROCESS_VM_READV, "process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
		"finit_module": unix.SYS_FINIT_MODULE, "kexec_file_load": unix.SYS_KEXEC_FILE_LOAD,
		"bpf": unix.SYS_BPF, "execveat": unix.SYS_EXECVEAT, "userfaultfd": unix.SYS_USERFAULTFD,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "io_uring_enter": unix.SYS_IO_URING_ENTER,
		"io_uring_register": unix.SYS_IO_URING_REGISTER, "open_tree": unix.SYS_OPEN_TREE,
		"move_mount": unix.SYS_MOVE_MOUNT, "fsopen": unix.SYS_FSOPEN, "fsconfig": unix.SYS_FSCONFIG,
		"fsmount": unix.SYS_FSMOUNT, "fspick": unix.SYS_FSPICK, "clone3": unix.SYS_CLONE3,
		"mount_setattr": unix.SYS_MOUNT_SETATTR, "quotactl_fd": unix.SYS_QUOTACTL_FD,
		"open_tree_attr": unix.SYS_OPEN_TREE_ATTR, "fallocate": unix.SYS_FALLOCATE,
		"prlimit64": unix.SYS_PRLIMIT64, "setpriority": unix.SYS_SETPRIORITY,
		"sched_setaffinity": unix.SYS_SCHED_SETAFFINITY, "sched_setscheduler": unix.SYS_SCHED_SETSCHEDULER,
		"sched_setparam": unix.SYS_SCHED_SETPARAM, "sched_setattr": unix.SYS_SCHED_SETATTR,
		"ioprio_set": unix.SYS_IOPRIO_SET, "process_madvise": unix.SYS_PROCESS_MADVISE,
		"pidfd_open": unix.SYS_PIDFD_OPEN, "pidfd_getfd": unix.SYS_PIDFD_GETFD, "kcmp": unix.SYS_KCMP,
		"migrate_pages": unix.SYS_MIGRATE_PAGES, "move_pages": unix.SYS_MOVE_PAGES,
		"get_robust_list": unix.SYS_GET_ROBUST_LIST, "process_mrelease": unix.SYS_PROCESS_MRELEASE,
		"memfd_secret": unix.SYS_MEMFD_SECRET, "connect": unix.SYS_CONNECT,
		"tkill": unix.SYS_TKILL, "tgkill": unix.SYS_TGKILL, "rt_tgsigqueueinfo": unix.SYS_RT_TGSIGQUEUEINFO,
		"kill": unix.SYS_KILL, "rt_sigqueueinfo": unix.SYS_RT_SIGQUEUEINFO,
	}
	for name, nr := range x86Only {
		want[name] = nr
	}
	if len(want) != len(a.nr) {
		t.Errorf("%s: table has %d calls, this check lists %d", a.Name, len(a.nr), len(want))
	}
	for name, nr := range want {
		if got, ok := a.Nr(name); !ok || got != nr {
			t.Errorf("%s: %s = %d (present %v), x/sys says %d", a.Name, name, got, ok, nr)
		}
	}
}

package seccomp

// Arch is a system call ABI a filter can be built for. The tables are kept for
// every supported architecture regardless of GOARCH so that the interpreter
// tests check the arm64 filter on an x86_64 build host too.
type Arch struct {
	// Name is the kernel's name for the architecture (uname -m).
	Name string
	// AuditArch is the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch
	// for a native system call.
	AuditArch uint32
	// X32 is true on x86_64, where system call numbers with bit 30 set select
	// the x32 ABI that shares AUDIT_ARCH_X86_64 and must be refused separately.
	X32 bool
	nr  map[string]uint32
}

// Nr returns the number of the named system call, and false when the
// architecture has no such call (iopl and ioperm exist only on x86).
func (a *Arch) Nr(name string) (uint32, bool) {
	n, ok := a.nr[name]
	return n, ok
}

// x32SyscallBit is __X32_SYSCALL_BIT.
const x32SyscallBit = 0x40000000

// Audit architecture values from <linux/audit.h>.
const (
	AuditArchX86_64  = 0xc000003e
	AuditArchAarch64 = 0xc00000b7
	AuditArchI386    = 0x40000003
	AuditArchARM     = 0x40000028
)

// AMD64 is x86_64 (numbers from arch/x86/entry/syscalls/syscall_64.tbl).
var AMD64 = &Arch{Name: "x86_64", AuditArch: AuditArchX86_64, X32: true, nr: map[string]uint32{
	"ioctl": 16, "socketpair": 53, "socket": 41, "clone": 56, "execve": 59,
	"ptrace": 101, "personality": 135, "pivot_root": 155, "prctl": 157, "chroot": 161,
	"acct": 163, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168,
	"reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175,
	"delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
	"kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
	"unshare": 272, "perf_event_open": 298, "fanotify_init": 300,
	"name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308,
	"process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
	"kexec_file_load": 320, "bpf": 321, "execveat": 322, "userfaultfd": 323,
	"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
	"open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
	"fsmount": 432, "fspick": 433, "clone3": 435, "mount_setattr": 442,
	"quotactl_fd": 443, "open_tree_attr": 467, "fallocate": 285,
	"prlimit64": 302, "setpriority": 141, "sched_setaffinity": 203,
	"sched_setscheduler": 144, "sched_setparam": 142, "sched_setattr": 314,
	"ioprio_set": 251, "process_madvise": 440, "pidfd_open": 434,
	"pidfd_getfd": 438, "kcmp": 312, "migrate_pages": 256, "move_pages": 279,
	"get_robust_list": 274, "process_mrelease": 448, "memfd_secret": 447,
	"connect": 42, "tkill": 200, "tgkill": 234, "rt_tgsigqueueinfo": 297,
	"kill": 62, "rt_sigqueueinfo": 129,
}}

// ARM64 is aarch64 (numbers from include/uapi/asm-generic/unistd.h).
var ARM64 = &Arch{Name: "aarch64", AuditArch: AuditArchAarch64, nr: map[string]uint32{
	"lookup_dcookie": 18, "ioctl": 29, "umount2": 39, "mount": 40,
	"pivot_root": 41, "chroot": 51, "quotactl": 60, "acct": 89,
	"personality": 92, "unshare": 97, "kexec_load": 104, "init_module": 105, "prctl": 167,
	"delete_module": 106, "ptrace": 117, "reboot": 142, "socket": 198,
	"socketpair": 199, "add_key": 217, "request_key": 218, "keyctl": 219,
	"clone": 220, "execve": 221, "swapon": 224, "swapoff": 225,
	"perf_event_open": 241, "fanotify_init": 262, "name_to_handle_at": 264,
	"open_by_handle_at": 265, "setns": 268, "process_vm_readv": 270,
	"process_vm_writev": 271, "finit_module": 273, "bpf": 280, "execveat": 281,
	"userfaultfd": 282, "kexec_file_load": 294, "io_uring_setup": 425,
	"io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
	"move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
	"fspick": 433, "clone3": 435, "mount_setattr": 442, "quotactl_fd": 443,
	"open_tree_attr": 467, "fallocate": 47,
	"prlimit64": 261, "setpriority": 140, "sched_setaffinity": 122,
	"sched_setscheduler": 119, "sched_setparam": 118, "sched_setattr": 274,
	"ioprio_set": 30, "process_madvise": 440, "pidfd_open": 434,
	"pidfd_getfd": 438, "kcmp": 272, "migrate_pages": 238, "move_pages": 239,
	"get_robust_list": 100, "process_mrelease": 448, "memfd_secret": 447,
	"connect": 203, "tkill": 130, "tgkill": 131, "rt_tgsigqueueinfo": 240,
	"kill": 129, "rt_sigqueueinfo": 138,
}}

// ArchFor returns the table for a GOARCH value, or false if no filter can be
// built for it (the jail then refuses to run: it fails closed).
func ArchFor(goarch string) (*Arch, bool) {
	switch goarch {
	case "amd64":
		return AMD64, true
	case "arm64":
		return ARM64, true
	}
	return nil, false
}

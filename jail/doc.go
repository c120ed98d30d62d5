// Package jail enforces a policy.Sandbox on Linux, the server's side: it
// starts each command through a launcher, a child of the autobox binary
// (`autobox worker exec`, jail/launcher) that can kill everything the command
// spawns, and holds what this process keeps of it (Start, Pool, Tree, the
// cgroups it makes, the probes and the mode, the JS worker's spawner in
// workerjail_linux.go). It never imports jail/launcher: the two sides are two
// processes, and they talk only through jail/wire (frames and codec,
// descriptors, role names, what the server tells a launcher in its
// environment). What both use lives in rooms of their own: the thread
// restriction (jail/internal/confine: Landlock with the hidden paths, the
// commands' uid, capabilities, no_new_privs, seccomp, Probe; RestrictThread
// here is it) and the process-tree sweep (jail/internal/proctree). Raw seccomp
// programs are assembled in jail/seccomp; the JS worker's own step is
// jail/restrict's, the only part of the jail the worker imports. The server's
// side also makes each command's cpuset cgroup (cgroupviewcpuset_linux.go) for
// the view of its own cgroups the launcher mounts. Other platforms compile a
// stub that fails closed.
//
// Why per thread: autobox links V8 through cgo, so the process has threads
// that Go does not control. Landlock (without TSYNC) and seccomp (without
// TSYNC) apply to the calling thread and are copied to children at clone,
// so a goroutine that locks its thread, restricts it and forks from it gives
// the child the restrictions and leaves the rest of the process alone.
//
// # Enforced
//
//   - Filesystem (Landlock, ABI >= 3 required; Check refuses older): every
//     access right the running ABI knows is handled, so only what a rule grants
//     is possible. ReadOnly: read files, list directories, and execute when
//     AllowExec. ReadWrite: everything (execute only when AllowExec). Devices:
//     read, write, truncate (for `> /dev/null`), ioctl (ABI >= 5). Files
//     get file rights only; missing paths are skipped. Denied: reading,
//     listing, writing, creating, truncating (truncate(2) and O_TRUNC),
//     renaming, linking, removing, mkdir, mknod, symlink outside the rules.
//     DenyWrite paths are unwritable because no rule covers them; a DenyWrite
//     path inside a ReadWrite path is refused (ErrPolicy).
//   - Network, when !AllowNetwork: seccomp fails socket(2) and socketpair(2)
//     for every family but AF_UNIX with EAFNOSUPPORT (IPv4, IPv6, netlink,
//     packet, raw...), and Landlock (ABI >= 4) denies TCP bind and connect
//     even on a socket obtained some other way. With PrivateNetwork
//     (allowHosts) socket(2) is allowed for the families a network namespace
//     confines alone (unix, IP, netlink); AF_VSOCK fails with EAFNOSUPPORT
//     always, the whole network included.
//   - Scoping (Landlock ABI >= 6, always on): no signals to processes outside
//     the sandbox, no connecting to abstract unix sockets bound outside it.
//   - seccomp, always: EPERM for ptrace, process_vm_readv/writev, mounts and
//     the new mount API, pivot_root, chroot, unshare, setns, clone with
//     namespace flags, keyrings, bpf, perf_event_open, userfaultfd, kexec,
//     module loading, open_by_handle_at/name_to_handle_at, swap, reboot,
//     iopl/ioperm, acct, quotactl, lookup_dcookie, fanotify_init, io_uring,
//     personality other than the default, ioctl TIOCSTI and TIOCLINUX.
//     clone3 fails with ENOSYS (libc falls back to clone, whose flags the
//     filter can read). Foreign ABIs (i386 int 0x80, x32, arm32) fail with
//     ENOSYS. Calls that act on another process may name only the caller
//     (see seccomp.PidZeroOnly and its kin).
//   - no_new_privs: setuid binaries and file capabilities give nothing.
//   - Process trees: the command runs in its own process group in the
//     launcher's new session, with no controlling terminal, stdin /dev/null,
//     exactly fds 0-2, exactly the given environment. The launcher is a child
//     subreaper; when the command exits or Kill is called it SIGKILLs every
//     descendant (setsid and double-fork included) until none is left.
//     A session's command (Pool.StartInteractive) gets the caller's stdin
//     instead, or a pseudo-terminal's slave as fds 0-2, and then a session of
//     its own with that terminal as its controlling tty; Tree.Signal has the
//     launcher send SIGINT, SIGTERM or SIGKILL to its process group.
//   - The launcher is out of its command's reach: the thread that restricts
//     itself and starts the command exits, so no thread of the launcher is
//     in the command's Landlock domain (scoping refuses signals to it, the
//     ptrace rule its /proc files), and it is not dumpable. Where this
//     process holds CAP_SYS_ADMIN (root) each launcher is the init of a pid
//     namespace of its own: the command cannot name a process outside it,
//     the kernel drops what it sends the launcher, and the launcher's death,
//     however it comes, kills every process in the namespace. Run as root,
//     the launcher's OOM score is the minimum once the command runs.
//     Without a namespace, a launcher that dies without reporting has its
//     cgroup's processes killed (Pool's launchers have one where this process
//     may make cgroups), then its descendants and session.
//   - Resource limits of a spec's policy.Limits (jail/launcher's
//     limits_linux.go, cmdcgroup_linux.go): RLIMIT_FSIZE (SIGXFSZ ignored: EFBIG), RLIMIT_NOFILE
//     and RLIMIT_CPU, set on the launcher right before it forks the command;
//     where this process may make cgroups (v1), a pids cgroup (pids.max is
//     Limits.Processes) and a cpu cgroup of the command's own, joined by the
//     command thread alone, so the launcher's threads stay out; fallocate
//     fails with EOPNOTSUPP. Without such a cgroup, RLIMIT_NPROC: in a
//     user namespace the call's own count (userns_linux.go), on the host the
//     user's count plus Processes and a margin (jail/launcher's nprochost_linux.go). The exit
//     report carries what the kernel accounted of the reaped tree
//     (policy.Usage).
//   - Private root (CAP_SYS_ADMIN): the command's "/" is a tmpfs holding only
//     its policy's paths, bound read-only or read-write (jail/launcher's rootfs_linux.go), and
//     a /proc of its own pid namespace. A policy's /sys/fs/cgroup is the
//     tree's own cgroups alone (jail/launcher's cgroupview_linux.go): a cgroup
//     namespace of its own with those hierarchies mounted read-only; without a
//     private root, Landlock reads of their directories. Where that root is missing, unix
//     socket pairs are stream or seqpacket only without network (a datagram
//     socket could be addressed to any named socket on the host).
//
// # Not enforced
//
//   - Metadata, without a private root: Landlock has no right for chmod,
//     chown, utimes or extended attributes, nor for stat, readlink, path
//     lookup, access(2) or inotify: a command can see which files exist
//     anywhere, and change the mode of files its user owns.
//   - The uid is kept; every capability is dropped (bounding set emptied,
//     securebits locked) before the restriction (jail/internal/confine's caps_linux.go).
//   - Pathname unix sockets: connecting to an existing socket file (a Docker
//     or D-Bus socket) is not a Landlock right in ABI <= 7; seccomp therefore
//     refuses socket(AF_UNIX) unless the network is allowed (socketpair stays).
//   - Below Landlock ABI 6 signals and abstract unix sockets are not scoped;
//     below ABI 4 TCP relies on the seccomp family check alone.
//   - AllowExec=false denies execve of files; it does not stop a running
//     program from mapping memory executable (JIT, dlopen of readable files).
//   - System V IPC and POSIX message queues are not isolated.
//   - Limits over the whole tree that the kernel does not hold here (memory
//     as RSS, bytes written in all, the tree's CPU time, processes without a
//     pids cgroup) are the caller's watchdog's (internal/watchdog), with what
//     Tree tells it (ForksRefused, Shmem); a memory cgroup's hard limit is
//     set by Pool.
//   - Without a pid namespace or a cgroup (an unprivileged user without a
//     delegated cgroup), a launcher SIGKILLed from outside leaves the
//     descendants that left its session, orphaned to init, to live on; and
//     below Landlock ABI 6 the command itself may signal its launcher.
package jail

// Package jail enforces a policy.Sandbox on Linux: Landlock, seccomp and
// no_new_privs on one locked OS thread (RestrictThread, jail/internal/confine's), inherited by what
// that thread starts, and process trees run through a launcher role of the
// autobox binary (`autobox worker exec`, launch; dispatched by jail/launcher's
// table from ChildRoles) that can kill everything a command spawns (Start,
// Pool, Tree). WorkerSpawner and
// restrict.EnterWorker are the JS worker's jail (workerjail_linux.go); the
// worker imports jail/restrict alone. Raw seccomp programs are assembled in
// jail/seccomp. Other platforms compile a stub that fails closed.
//
// The package holds the code of two processes, file by file: the long-lived
// server's side (Start, Pool, Tree, cgroup creation, probes, modes: tree*,
// pool, cgroup, cmdcgroup, cpuacct*, userns, usernsfork, nprochosttree,
// container, status, transparent_probe, workerjail) and the one-shot
// launcher's (launcher_linux.go and what only it calls: root*, places,
// mountns's isolate, netns, transparent, ports, ipcwatch, oomscore, limits,
// prepare, unixguard*, sockdiag, reported, command, cmdcgroupjoin,
// usernschild, nprochost). What both call is in rooms of its own: the thread
// restriction (jail/internal/confine: Landlock with the hidden paths, the
// commands' uid, capabilities, no_new_privs, seccomp, Probe; the JS worker's
// spawner uses it too) and the process-tree sweep (jail/internal/proctree).
// The launcher keeps its state in its two threads (cmdThread, started),
// not in package variables. The two sides talk only through jail/wire (frames
// and codec, descriptors, role names, what the server tells a launcher in its
// environment). The launcher's entry and role table are jail/launcher's, the
// JS worker's own step is jail/restrict's.
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
//   - Resource limits of a spec's policy.Limits (limits_linux.go,
//     cmdcgroup_linux.go): RLIMIT_FSIZE (SIGXFSZ ignored: EFBIG), RLIMIT_NOFILE
//     and RLIMIT_CPU, set on the launcher right before it forks the command;
//     where this process may make cgroups (v1), a pids cgroup (pids.max is
//     Limits.Processes) and a cpu cgroup of the command's own, joined by the
//     command thread alone, so the launcher's threads stay out; fallocate
//     fails with EOPNOTSUPP. Without such a cgroup, RLIMIT_NPROC: in a
//     user namespace the call's own count (userns_linux.go), on the host the
//     user's count plus Processes and a margin (nprochost_linux.go). The exit
//     report carries what the kernel accounted of the reaped tree
//     (policy.Usage).
//   - Private root (CAP_SYS_ADMIN): the command's "/" is a tmpfs holding only
//     its policy's paths, bound read-only or read-write (rootfs_linux.go), and
//     a /proc of its own pid namespace. Where that root is missing, unix
//     socket pairs are stream or seqpacket only without network (a datagram
//     socket could be addressed to any named socket on the host).
//
// # The launcher's setup, in order
//
// What `autobox worker exec` does between its start and the command's exec
// (launcher_linux.go, each step in the function named), and, for each, the
// invariant it relies on and what breaks if it moves:
//
//  0. init of the program (autobox's, or a test binary that plays it):
//     launcher.LockMainThread keeps the main thread for the main goroutine.
//     Relies on: the runtime runs init on the main thread, before any other
//     goroutine. Held by: launcher.Main refuses to run a role without it,
//     the command thread checks restrict.NotMainThread (TestLauncherNeedsLockedMainThread).
//  1. launch, main thread (never restricted): descriptors 3 and up become
//     close-on-exec; the OOM score and /proc/self/io are opened (handed to
//     the command thread and to treeUsage) while the process is still
//     dumpable; then PR_SET_DUMPABLE 0 and PR_SET_CHILD_SUBREAPER. Relies on:
//     a dumpable process's /proc files are its user's (after, root's: an
//     ordinary user could no longer open them).
//  2. commandThread, a thread of its own, locked for good: joins the command's
//     cgroups (joinCmdCgroups; it keeps pids.max in cmdThread). Relies on:
//     on cgroup v1 writing 0 to tasks moves the writing thread alone, so the
//     launcher's other threads stay out and the command is born in them.
//  3. startFromSpec, while the spec has not come: Probe, the usual seccomp
//     filter built; on a {prepare} frame, prepare: the network namespace,
//     the private root begun for the base policy, the base's Landlock ruleset,
//     the capability bounding set dropped (prepare_linux.go), and
//     {prepared} reported. Relies on: nothing here depends on the spec, and
//     what fails is redone, or fails, in step 4 as it would unprepared.
//  4. startCommand: the spec's network (isolateNet), then its filesystem
//     (isolate: mount namespace, the private root's binds and places, pivot;
//     without a root the paths are rewritten, policy.RewriteCommand); ports
//     listened on in that network (listenPorts, handed to the main thread in
//     started); the program looked up in the root it will run in; the OOM
//     score raised. Relies on: the network first (the root is built for a
//     command with or without a network of its own, and the host's /proc
//     names the host's namespace only before the root changes); binds need
//     CAP_SYS_ADMIN, so before step 5; the score's file is written before
//     /proc/self turns read-only.
//  5. restrictThread: the Landlock ruleset (the prepared one extended, or
//     built), the uid dropped, every capability dropped, no_new_privs,
//     landlock_restrict_self, and last the seccomp filter (with the unix
//     guard's listener where it is used). Relies on: nothing after it needs a
//     call the filter refuses or a right Landlock denies; the rules are opened
//     in the root the command gets.
//  6. Resource limits (applyRlimits, cmdThread.applyNproc,
//     cmdThread.applyHostNproc): last before the fork. Relies on: they bind
//     the launcher's thread too (the set-up's own forks and files would count).
//  7. ForkExec of the command; the pids cgroup's limit lowered to the call's
//     (lowerPidsMax); {started} reported. The thread then exits, taking its
//     Landlock domain. Relies on: no thread left in the launcher shares the
//     command's domain, so scoping refuses the command's signals to it; the
//     main thread serves ports, the guard, the proxy forwarder and the
//     control socket, and reaps.
//
// The red-team tests hold each step's promise from the command's side
// (test/redteam_*_test.go, jail/*_linux_test.go); a step moved earlier or later
// breaks one of them (a restriction before a bind: the bind fails; limits
// before the thread's setup: the setup's own forks and files count).
//
// # Not enforced
//
//   - Metadata, without a private root: Landlock has no right for chmod,
//     chown, utimes or extended attributes, nor for stat, readlink, path
//     lookup, access(2) or inotify: a command can see which files exist
//     anywhere, and change the mode of files its user owns.
//   - The uid is kept; every capability is dropped (bounding set emptied,
//     securebits locked) before the restriction (caps_linux.go).
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

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/etcsecrets"
	"github.com/autobox-dev/autobox/jail"
)

// landlockFeatures is what each Landlock ABI version adds
// (Documentation/userspace-api/landlock.rst).
var landlockFeatures = []string{
	1: "filesystem rules",
	2: "rename/link across directories",
	3: "truncate",
	4: "TCP bind/connect",
	5: "device ioctl",
	6: "signal and abstract-socket scoping",
	7: "audit logging control",
}

// platformChecks reports the kernel mechanisms the jail uses for exec_command and the
// JS workers.
func platformChecks(r *DoctorReport) {
	st := jail.Probe()
	switch {
	case st.LandlockABI == 0:
		r.add("landlock", statusMissing, st.Landlock, "exec_command is refused; JS workers are not jailed")
	case st.LandlockABI < jail.MinLandlockABI:
		r.add("landlock", statusMissing, fmt.Sprintf("ABI %d: %s", st.LandlockABI, landlockAllows(st.LandlockABI)),
			fmt.Sprintf("exec_command is refused: ABI %d (Linux 6.2) is needed to deny truncating read-only files", jail.MinLandlockABI))
	default:
		r.add("landlock", statusOK, fmt.Sprintf("ABI %d: %s", st.LandlockABI, landlockAllows(st.LandlockABI)), "")
		if !st.TCPDenied() {
			r.add("landlock tcp", statusInfo, "no TCP rules (ABI < 4)", "TCP stays denied by seccomp's socket filter when the network is off")
		}
		if !st.Scoped() {
			r.add("landlock scoping", statusMissing, "no signal or abstract-socket scoping (ABI < 6)",
				"a sandboxed command can signal processes of its user and reach abstract unix sockets")
		}
	}
	if st.Seccomp && st.SeccompArch != "" {
		r.add("seccomp", statusOK, fmt.Sprintf("filters with SECCOMP_RET_ERRNO, %s syscall table", st.SeccompArch), "")
	} else if !st.Seccomp {
		r.add("seccomp", statusMissing, "seccomp filters are not available", "exec_command is refused")
	} else {
		r.add("seccomp", statusMissing, "no syscall table for "+st.Platform, "exec_command is refused")
	}
	if st.NoNewPrivs {
		r.add("no_new_privs", statusOK, "PR_SET_NO_NEW_PRIVS available", "")
	} else {
		r.add("no_new_privs", statusMissing, "PR_SET_NO_NEW_PRIVS is not available", "exec_command is refused")
	}
	iso := jail.Isolations()
	modeCheck(r, iso)
	containerCheck(r, iso)
	isolationChecks(r, iso)
}

// modeCheck reports which of the three Linux modes this process's launchers
// run in, and for an ordinary user without user namespaces the one-time fix.
func modeCheck(r *DoctorReport, iso jail.Isolation) {
	switch {
	case iso.UserNamespace:
		r.add("mode", statusOK, jail.ModeUserNS+": each launcher is made in a user namespace of its own (uid "+fmt.Sprint(os.Getuid())+" mapped to itself)",
			"an ordinary user gets what root gets: pid, mount, network and IPC namespaces; commands keep the user's uid, with no capabilities")
	case iso.PidNamespace:
		r.add("mode", statusOK, jail.ModeRoot+": this process holds CAP_SYS_ADMIN, so each launcher makes its namespaces itself", "commands run without capabilities")
	default:
		detail := "Landlock and seccomp on the host's filesystem and network"
		if uid, _, drop := jail.CommandCredential(); drop {
			detail += fmt.Sprintf("; commands run as uid %d, not root", uid)
		}
		r.add("mode", statusInfo, jail.ModeLandlock+": "+detail, noNamespacesWhy(iso))
	}
	r.add("user namespaces", statusInfo, userNamespaces(), "")
}

// noNamespacesWhy says why there are no namespaces, and how to have them.
func noNamespacesWhy(iso jail.Isolation) string {
	if iso.NamespacesOff {
		return jail.NoNamespacesEnv + "=1 turned them off"
	}
	if os.Geteuid() == 0 {
		if fix := jail.ContainerFix(); fix != "" {
			return "this container refuses namespaces even to root: " + fix
		}
		return "this host refuses namespaces even to root (a container?)"
	}
	_, why, fix := jail.UserNamespaces()
	if fix == "" {
		return "user namespaces cannot be used here: " + why
	}
	return "user namespaces cannot be used here: " + why + ". To allow them:\n" + fix
}

// isolationChecks reports what the launchers add where this process may: the
// namespaces, the memory cgroup, the OOM scores.
func isolationChecks(r *DoctorReport, iso jail.Isolation) {
	none := "none (needs root or user namespaces)"
	if iso.NamespacesOff {
		none = "off (" + jail.NoNamespacesEnv + "=1)"
	}
	switch {
	case iso.PidNamespace:
		r.add("pid namespace", statusOK, "each command runs in a pid namespace of its own, its launcher the init",
			"no process of a command outlives its launcher, and a command cannot see, signal or prlimit anything outside")
	case iso.MemoryCgroups:
		r.add("pid namespace", statusInfo, none, "a launcher that dies has every process of its cgroup killed")
	default:
		r.add("pid namespace", statusInfo, none+", and no cgroups",
			"if a launcher is killed from outside, a daemon that left its session may outlive it")
	}
	if iso.PrivateRoot {
		r.add("private root", statusOK, "each command's / holds only its allowed paths; /tmp is the call's own scratch dir", "nothing else exists for it: no host file to stat, no other user's home, no host socket outside its mounts")
		r.add("devices", statusOK, "/dev/shm, /run and a devpts of the call's own, /dev/console for a session's terminal", "POSIX shared memory and semaphores (Python's multiprocessing, Chromium, PostgreSQL) and pseudo-terminals (script, expect, tmux) work, and die with the call; /dev/shm counts as the call's memory")
		r.add("users", statusOK, "/etc/passwd and /etc/group of the call's own: root, nobody and the command's user", "whoami, ssh-keygen and getpwuid work; no other account of the host shows")
	} else {
		r.add("private root", statusInfo, none,
			"a command can stat, list the attributes of and watch paths outside its mounts, and chmod its user's files; datagram unix socket pairs are refused")
		r.add("devices", statusInfo, "the host's null, zero, full, random, urandom and tty only; the host's /tmp and /run, not writable",
			"no /dev/shm (Python's multiprocessing pools and queues, POSIX shared memory) and no terminals of its own (script, pty.fork): those programs fail here, and so do programs that write to /tmp itself (tmux: TMUX_TMPDIR=$TMPDIR works) or /run (screen)")
		r.add("users", statusInfo, "the host's /etc/passwd and /etc/group", "")
	}
	if jail.UnixGuard() {
		r.add("unix sockets", statusOK, "a command's own: stream and seqpacket sockets it listens on; datagram sockets refused", "every connect goes through a guard in its launcher, which refuses a socket of the host's (an agent, docker.sock, autobox's own) even in a mounted directory")
	} else {
		r.add("unix sockets", statusInfo, "socket pairs only without network (this kernel lacks seccomp user notification or pidfd_getfd, Linux 5.6)",
			"tmux, gpg-agent, PostgreSQL's and Redis's sockets fail without network; with allowNetwork a command can reach the host's sockets (docker.sock, the session bus)")
	}
	r.add("etc", statusOK, fmt.Sprintf("the host's /etc, read-only, but %d secret paths", len(etcHidden())),
		"the documented list (shadow, sudoers, host keys, TLS and VPN keys, saved connections, registry credentials) and every entry that is not world-readable: their names may be listed, never read")
	r.add("ptrace", statusOK, "of a command's own processes (strace, gdb, delve)", "Landlock refuses it for any process outside the call")
	if why := jail.NoPrivateNetworkWhy(); why != "" {
		r.add("network by host", statusMissing, "none: "+why,
			"exec_command refuses allowHosts, naming this; a command without network gets a network namespace whose loopback is down (a server it starts cannot be reached, even by itself)")
	} else if iso.PrivateNetwork {
		r.add("network by host", statusOK, "allowHosts: each command gets a network namespace with only loopback and the proxy in it",
			"it reaches the listed hosts through autobox's proxy and nothing else; commands without network run in a namespace with loopback alone (their own servers work, nothing leaves)")
	} else {
		r.add("network by host", statusInfo, none,
			"exec_command refuses allowHosts (allowing the proxy's port alone would let a command reach any host on it); execute_js's fetch honours it; a command without network has no sockets but unix ones")
	}
	if iso.PrivateNetwork {
		transparentCheck(r)
	}
	if iso.IPCNamespace {
		r.add("ipc namespace", statusOK, "each launcher has an IPC namespace of its own", "System V shared memory, semaphores and message queues, and POSIX message queues, die with the call")
	} else {
		r.add("ipc namespace", statusInfo, none, "System V segments a command makes outlive the call")
	}
	if iso.MemoryCgroups {
		r.add("memory cgroup", statusOK, "a hard kernel limit per command", "")
	} else {
		r.add("memory cgroup", statusInfo, "none (needs root or a delegated cgroup)",
			"memoryMb is enforced by the RSS watchdog alone, which counts resident memory, page tables, the memfds a command holds open and the System V objects of its IPC namespace, not memfds it mapped and closed or sent through a socket, nor data queued in sockets and pipes (bounded by maxOpenFiles x 2 x net.core.wmem_max for each process), nor files it writes to a tmpfs")
	}
	if iso.OOMPinned {
		r.add("oom score", statusOK, "commands 1000 (pinned), launchers -1000", "the OOM killer takes a command's processes, never its launcher")
	} else {
		r.add("oom score", statusInfo, "commands start at 1000, launchers keep theirs (no CAP_SYS_RESOURCE)",
			"a command that lowers its processes' scores may have the OOM killer take its launcher; the call then ends as a memory kill")
	}
	limitChecks(r, iso)
}

// transparentCheck reports whether allowHosts holds for every program or
// only for the tools that read the proxy variables.
func transparentCheck(r *DoctorReport) {
	if ok, why := jail.TransparentNetwork(); ok {
		r.add("network by host, every program", statusOK, "nf_tables in each command's namespace: its lookups are answered by allowHosts, its TCP connections redirected to autobox's proxy",
			"programs that ignore HTTP_PROXY (Node's fetch, database clients, Go and C programs that resolve and connect themselves) reach the listed hosts too, and nothing else")
	} else {
		r.add("network by host, every program", statusInfo, "only tools that read the proxy variables: "+why,
			"allowHosts still holds for every program; a program that ignores HTTP_PROXY/ALL_PROXY fails at its lookup (the name is recorded) instead of reaching the host. The kernel needs nf_tables with NAT and redirect (CONFIG_NF_TABLES, CONFIG_NFT_NAT, CONFIG_NFT_REDIR, CONFIG_NFT_REJECT)")
	}
}

func landlockAllows(abi int) string {
	var have []string
	for v := 1; v <= abi && v < len(landlockFeatures); v++ {
		have = append(have, landlockFeatures[v])
	}
	if abi >= len(landlockFeatures) {
		have = append(have, "and newer")
	}
	return strings.Join(have, ", ")
}

// userNamespaces is informational: an ordinary user's launchers are made in
// them (see jail's userns_linux.go), and the seccomp filter keeps sandboxed
// commands from making any.
func userNamespaces() string {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	const note = "; denied to sandboxed commands"
	// Probed for every server without CAP_SYS_ADMIN, root in a container too.
	if ok, why, _ := jail.UserNamespaces(); !ok && jail.ModeName() != jail.ModeRoot {
		return "refused to this process: " + why + note
	}
	switch {
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "disabled (user.max_user_namespaces = 0)" + note
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "root only (kernel.unprivileged_userns_clone = 0)" + note
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "restricted by AppArmor for unprivileged users" + note
	case read("/proc/sys/user/max_user_namespaces") == "":
		return "unknown (no user.max_user_namespaces)" + note
	}
	return "available (user.max_user_namespaces = " + read("/proc/sys/user/max_user_namespaces") + ")" + note
}

// treeWalkable checks that the kernel lists each thread's children, which is how the
// watchdog and the tree kill find a command's descendants (CONFIG_PROC_CHILDREN).
func treeWalkable() error {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", os.Getpid()))
	if len(files) == 0 {
		return errors.New("/proc/PID/task/TID/children is missing (CONFIG_PROC_CHILDREN)")
	}
	return nil
}

// cloneProbe tries FICLONE between two small files in dir.
func cloneProbe(dir string) (fsName string, ok bool, err error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return "", false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	fsName = fsNames[int64(sfs.Type)]
	if fsName == "" {
		fsName = fmt.Sprintf("filesystem 0x%x", sfs.Type)
	}
	src, dstPath, cleanup, err := probeFiles(dir)
	if err != nil {
		return fsName, false, err
	}
	defer cleanup()
	dst, err := os.OpenFile(dstPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fsName, false, err
	}
	defer dst.Close()
	err = unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
	switch {
	case err == nil:
		return fsName, true, nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTTY), errors.Is(err, unix.ENOSYS):
		return fsName, false, nil
	}
	return fsName, false, fmt.Errorf("FICLONE: %w", err)
}

// fsNames names the filesystems one is likely to meet (statfs f_type magic numbers).
var fsNames = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlayfs",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.F2FS_SUPER_MAGIC:      "f2fs",
	0xca451a4e:                 "bcachefs",
	0x65735546:                 "fuse",
	0x2fc12fc1:                 "zfs",
}

// etcHidden is what of the host's /etc commands may not read now.
func etcHidden() []string {
	etc, err := filepath.EvalSymlinks("/etc")
	if err != nil {
		return nil
	}
	return etcsecrets.New(etc).Hidden()
}

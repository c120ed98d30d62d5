// Package seatbelt enforces a policy.Sandbox on macOS with the kernel's
// seatbelt sandbox, through /usr/bin/sandbox-exec (always by that absolute
// path), and runs exec_command process trees under it. It also writes the
// profile for the JS worker.
//
// Profiles are plain Go and build everywhere; running them needs macOS. The
// fixed part of each profile is an embedded .sbpl file. Caller paths never
// enter profile text: generated rules refer to them as (param "RO_0") and the
// like, and Args passes each as its own -D NAME=path argument, so a path with
// quotes, parentheses or newlines cannot change the profile.
//
// What the exec_command profile enforces (deny by default):
//   - Reads, mmap(PROT_EXEC) and exec are allowed on the system, but not under
//     the user-data prefixes /Users, /Volumes, /Network, /System/Volumes/Data,
//     /cores, /home, /net, /tmp, /private/tmp, /var, /private/var, /etc,
//     /private/etc, /Library/Keychains, /Library/Logs and /dev, except: the
//     TLS store (/etc/ssl, /private/etc/ssl), the time zone, /private/var/select
//     (which shell /bin/sh is), the Xcode tools link, the common devices, the
//     policy's ReadOnly and ReadWrite paths (read and exec) and stat of the
//     directories above them.
//   - Writes only to ReadWrite paths (mounts, the per-call scratch dir),
//     /dev/null, /dev/zero, /dev/fd and the policy's Devices. Write denials of
//     ReadOnly and DenyWrite paths, and of writable directories above them (a
//     rename would carry them away), come last and win over ReadWrite.
//   - Network: none unless AllowNetwork; then IP sockets, DNS and TLS trust
//     services. Unix sockets may bind and connect only under ReadWrite paths,
//     so the user's ssh-agent, Docker and other daemons' sockets are out of
//     reach.
//   - Signals and process inspection only within the sandbox; a fixed list of
//     informational sysctls; one directory-service lookup (user names).
//   - The process tree runs in its own session and process group, with stdin
//     /dev/null, descriptors 0-2 only, and exactly the caller's environment;
//     Kill and the end of Wait SIGKILL the group.
//
// What it does not enforce:
//   - Memory, time and the tree's process, write and CPU limits (the
//     supervisor's watchdog and timers do). A spec's per-process limits
//     (RLIMIT_FSIZE with SIGXFSZ ignored, RLIMIT_NOFILE, RLIMIT_CPU) are set by
//     `autobox worker limits` (LimitsMain) before it execs sandbox-exec.
//   - Reads outside the listed prefixes: /opt, /usr/local, /Applications and
//     /Library stay readable (system and tool installations, not user data).
//   - Hard links: a file under a ReadOnly path hard-linked from a writable
//     directory may be written through the new name, because seatbelt decides
//     by the path used.
//   - A ReadWrite path inside a ReadOnly one stays read-only (the denial wins;
//     Linux Landlock would make it writable).
//   - Descendants that leave the process group with setsid(2) or setpgid(2)
//     survive Kill: macOS has no subreaper or cgroup to find them by.
//   - Names of other processes (kern.proc.pid sysctls are not allowed, but
//     process-info is limited to the sandbox) and of users (directory lookups).
//   - AllowExec false: sandbox-exec starts the command by an exec the profile
//     governs, so ExecProfile then denies every exec (nothing runs) and Start
//     refuses the Spec; the JS worker uses WorkerProfile instead.
//
// The JS worker profile denies by default and allows only: exec of the worker
// binary itself (sandbox-exec's one exec; the worker could exec itself again,
// which gains nothing), reading and mapping that binary and the system
// libraries, /dev/null, /dev/urandom, the time zone, informational sysctls,
// and signals to itself. No file writes, no network, no fork.
//
// Elsewhere than macOS, Start and Available return ErrUnavailable (fail closed).
package seatbelt

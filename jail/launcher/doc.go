// Package launcher is the child side of autobox's processes: the one table
// of the roles the binary plays as `autobox worker ROLE` (the launcher and the
// probes the server runs in a child, and what the program adds with Register:
// the JS worker, the proxy's connect helper, macOS's limits), the rule that
// such a child's main thread is never restricted (LockMainThread from an init
// function; Main refuses to run a role without it), and the launcher itself:
// the one-shot process (`autobox worker exec`, launch) that builds one
// command's sandbox (network namespace and transparent path, private root and
// places, ports, the unix socket guard, System V IPC watch, rlimits, the
// command's cgroups joined, the thread restricted) and execs the command, then
// reaps and kills its tree and reports. Only cmd/autobox and the test binaries
// that play autobox import it; it imports none of the server's packages, jail
// included: what it shares with the server is jail/wire (the frames), and
// jail/internal/confine and jail/internal/proctree (the restriction, the
// tree's sweep). The launcher keeps its state in its two threads (cmdThread,
// started), not in package variables.
//
// # The launcher's setup, in order
//
// What `autobox worker exec` does between its start and the command's exec
// (launch_linux.go and the files named, each step in the function named), and, for each, the
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
//  5. confine.Restrict (jail/internal/confine), from startCommand: the Landlock ruleset (the prepared one extended, or
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
// (test/redteam_*_test.go, jail/*_linux_test.go, jail/launcher/*_linux_test.go);
// a step moved earlier or later breaks one of them (a restriction before a
// bind: the bind fails; limits before the thread's setup: the setup's own forks
// and files count).
package launcher

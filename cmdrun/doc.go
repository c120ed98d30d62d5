// Package cmdrun runs one command tree: it starts a policy.Command under the
// platform's sandbox (the jail's launchers on Linux, seatbelt on macOS; a
// refusal elsewhere), holds the tree to its limits (the watchdog, the kernel's
// cgroup and RLIMIT_CPU kills, a wall-clock limit that can pause) and ends it
// once, with a typed reason (Reason, KillKind).
//
// Its users are the MCP server's exec_command and sessions (package
// supervisor) and `autobox task run`'s native kind (package task), which start
// their trees differently (a warm pool of launchers with a memory cgroup; one
// launcher of its own) and hold them to their limits the same way: Enforce.
// What a result says of the end (texts, exit statuses) is theirs; the reasons
// and the limit texts, in the callers' own names for the limits
// (watchdog.Names), are made here.
//
// It imports nothing of the server or the command line.
package cmdrun

// Package confine restricts the calling OS thread to a policy.Sandbox, for both
// sides of the jail: a launcher's command thread and the server's spawner of JS
// workers. Its one job is the restriction itself and what it rests on: the
// Landlock ruleset (with the hidden paths split out), the commands' uid
// dropped, every capability dropped, no_new_privs, and the seccomp filter
// (assembled by jail/seccomp, loaded by jail/restrict); what a pooled launcher
// prepares of it ahead of its spec (Prepared); and what the host can enforce
// (Probe, Status, the sentinel errors). It imports nothing of the jail but
// jail/restrict, jail/seccomp and jail/wire.
package confine

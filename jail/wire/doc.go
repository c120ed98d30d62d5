// Package wire is the format jail's two processes share: the long-lived
// server's side (jail: Start, Pool, Tree) and the one-shot launcher it starts
// (`autobox worker exec`). It holds the frames and their codec, the message
// types, the descriptors the launcher inherits and the names of the roles
// jail starts. It imports nothing of ours but policy, so either side can be
// built without the other.
//
// The supervisor and the launcher (`autobox worker exec`) talk over two
// inherited descriptors, in frames of a 4-byte big-endian length and a message
// of tagged fields (codec.go; the JS worker's frames are JSON, not these). The
// launcher may be started long before its command (Pool), so the command's
// stdout and stderr travel with the spec as SCM_RIGHTS on a unix socket:
//
//	supervisor (Tree)                             launcher (launch)
//	  spawn: fork+exec, fds 0-2 /dev/null,         fds >= 3 close-on-exec; subreaper;
//	  in a new pid namespace where it can          main thread M (never restricted)
//	                                               starts the command thread C
//	  Pool: ctl socket ── {prepare, base} ───────▶ C: private root with base's paths
//	                                               (root only), Landlock ruleset with
//	                                               base's rules, bounding set emptied
//	  status pipe (fd 4) ◀── {prepared} ─────────── C: done preparing, waits for the spec
//	  ctl socket (fd 3) ── {spec} + [out, err] ──▶ C: the spec's paths into the root,
//	    (a session: {spec, stdin[, terminal]}      seal it; resolve argv[0]; restrict
//	     + [in, out, err])                         C; fork+exec command (own pgrp,
//	                                               fds 0=/dev/null,1=out,2=err; or
//	                                               0=in; a terminal: own session,
//	                                               in as controlling tty)
//	  status pipe        ◀── {started, pid} ────── ...or {spawn_error} / {error}, exit;
//	                                               C exits, M: OOM score -1000, reap
//	        ...command runs, writes straight into out and err...
//	  status pipe        ◀── {ipc, bytes} ──────── when its System V memory changes
//	                                               (in an IPC namespace of its own)
//	  Signal: ctl ── {signal, SIGINT} ───────────▶ kill(-command's pgrp), while the
//	                                               command is not reaped
//	  Kill: close ctl    ── EOF ─────────────────▶ kill request (also SIGTERM/INT/HUP,
//	                                               EOF when the supervisor dies, and
//	                                               any frame but a signal)
//	                                               command exited or kill requested:
//	                                               SIGKILL every descendant, reap,
//	                                               repeat until it has no children
//	                     ◀── {exit, code, signal}  exit(0)
//	  Pool.Close: close ctl before any spec ─────▶ exit(0) quietly
//
// After {exit}, {spawn_error} or {error} the launcher has no children left,
// so Wait returns at once and the launcher is reaped in the background. If
// the status pipe closes without one of them, the supervisor sweeps the tree
// itself (see Tree.Kill).
package wire

// The launcher's inherited descriptors (see the diagram above); the cgroup
// descriptors a launcher joins follow StatusFD.
const (
	CtlFD    = 3
	StatusFD = 4
)

// The roles of `autobox worker ROLE` that run jail's child side, which the
// server starts (os.Executable with "worker" and the role's name).
const (
	RoleExec             = "exec"              // a launcher: runs one command tree
	RoleUserNSProbe      = "userns-probe"      // what a launcher makes in a user namespace
	RoleTransparentProbe = "transparent-probe" // the transparent path in a network namespace
)

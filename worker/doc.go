// Package worker is the JS worker process, `autobox worker js`: it jails itself,
// warms a V8 isolate and context, serves exactly one execute_js call over the pipes
// described in worker/proto, and exits. It is the only package that imports v8go.
//
// Lifecycle on Linux:
//
//	supervisor spawns `autobox worker js` (fds 3 = from supervisor, 4 = to supervisor)
//	  stage 1: the main thread (locked since init) applies no_new_privs, a Landlock
//	           ruleset that allows reading and executing only the binary and the shared
//	           libraries it maps, and a seccomp filter; then it re-execs itself.
//	  stage 2: every thread of the new image descends from that thread, so every
//	           thread (including those V8 starts) is confined. It forbids further
//	           execve on all threads (seccomp TSYNC), warms V8, says "ready".
//
// On macOS the supervisor starts the worker under a deny-by-default seatbelt profile
// instead, and there is no stage 1.
package worker

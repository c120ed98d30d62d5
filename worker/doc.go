// Package worker is the JS worker process, `autobox worker js`: it jails itself,
// warms a V8 isolate and context, serves exactly one execute_js call over the pipes
// described in worker/proto, and exits. It is the only package that imports v8go.
//
// Lifecycle on Linux:
//
//	the supervisor's spawner thread restricted itself once: no_new_privs, a Landlock
//	ruleset that allows reading and executing only the autobox binary and the shared
//	libraries it maps, and a seccomp filter (no sockets but AF_UNIX, no ptrace, ...)
//	  └─ fork+exec `autobox worker js --jailed` from that thread (fds 3 and 4 = pipes)
//	       every thread of the new image descends from the confined thread, so every
//	       thread V8 will start is confined too; the worker forbids execve on all
//	       threads (seccomp TSYNC), warms V8 on a thread that is not the main one, says
//	       "ready", serves one call and exits.
//
// On macOS the supervisor starts the worker under a deny-by-default seatbelt profile.
package worker

// Package worker is the JS worker process, `autobox worker js`: it jails itself,
// warms a V8 isolate and context, serves exactly one execute_js call over the pipes
// described in worker/proto, and exits. It is the only package that imports v8go.
//
// Lifecycle on Linux (see jail/workerjail_linux.go):
//
//	the supervisor's spawner thread restricts itself: no capabilities, no_new_privs,
//	a Landlock ruleset that allows reading and executing only the autobox binary and
//	the shared libraries it maps
//	  └─ vfork from that thread, into a user and a pid namespace of its own where the
//	     host allows (the worker is pid 1 there, uid 65534, and can name no other
//	     process), fds 0-5 only (3 and 4 the pipes, 5 the life pipe), the sandbox's
//	     seccomp filter, exec `autobox worker js --jailed`
//	       every thread of the new image descends from the confined thread; before
//	       it reads anything the worker loads its seccomp allow-list on all threads
//	       (TSYNC: V8 started some at package init), warms V8 on a thread that is not
//	       the main one, says "ready", serves one call and exits. A system call the
//	       allow-list refuses is reported on stderr, and the supervisor logs it.
//
// On macOS the supervisor starts the worker under a deny-by-default seatbelt profile.
package worker

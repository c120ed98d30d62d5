// Package restrict holds what confines a thread or a process that the JS
// worker and both sides of jail share, and nothing else: loading a seccomp
// filter (LoadFilter, SockFilter), the worker's own last step (EnterWorker:
// its allow-list on every thread, with the SIGSYS handler that reports
// refusals), the seccomp support a host has (SeccompSupport), and the rule
// that the main thread of a process that restricts threads is never one of
// them (LockMainThread, NotMainThread). It imports no part of jail, so the
// worker links none of the launcher's or the server's code.
package restrict

import "errors"

// Sentinel errors; jail's errors of the same names are these.
var (
	// ErrUnsupported: this host cannot enforce what the policy needs (no
	// Landlock, an old Landlock ABI, no seccomp, an unsupported platform).
	ErrUnsupported = errors.New("jail: sandbox not enforceable on this host")
	// ErrSandbox: applying the restrictions failed.
	ErrSandbox = errors.New("jail: applying the sandbox failed")
)

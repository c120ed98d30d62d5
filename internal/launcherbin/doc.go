// Package launcherbin chooses the program a launcher is started from.
//
// Every exec_command call starts a launcher (`autobox worker exec`), and a
// launcher needs only package jail: started from the whole autobox binary it
// would also map and initialise V8 (its static constructor runs in every
// process), the MCP SDK and the rest, about twice the CPU of a binary with
// the launcher's code alone. So `make build` builds that small binary too
// (./cmd/autobox-launcher: pure Go, jail and what it imports) and appends it
// to bin/autobox, after the ELF image, with a trailer of fixed size
// (TrailerMagic and the payload's length in 16 decimal digits). The main
// binary is linked with the small one's Go build ID (-X buildID); users still
// install and run one file.
//
// The first launcher a process starts copies that payload from its own
// executable (/proc/self/exe, in the kernel: no page of it is mapped) into a
// sealed memfd and execs it as /proc/self/fd/N; argv[0] stays the main
// binary's path, so the launcher looks as before to ps and to the session
// daemon's peer check. Sealed, the launcher's code cannot be changed by
// anyone, not even by a command running as the same user; and it is the very
// launcher built with this binary: the two cannot drift apart, even when
// bin/autobox is rebuilt or replaced while a server runs.
//
// Where the small launcher cannot be used, launchers start from the main
// binary as they always did, and the reason is logged once (SetLog): a binary
// built without the Makefile's step (go build or go install alone: no
// payload, no build ID), a payload whose build ID is not the one this binary
// was linked with, memfd_create or its exec refused (vm.memfd_noexec=2, a
// seccomp filter), no /proc; and from the first launcher whose exec from the
// memfd fails (a security module refusing it): jail starts that one again
// from the main binary (Retry). Roles only the main binary has (the JS worker,
// the proxy's connect helper) always start from it.
package launcherbin

// TrailerMagic starts the 32-byte trailer that follows the payload: the magic
// and the payload's length as 16 decimal digits.
const TrailerMagic = "AUTOBOX-LAUNCHER"

// trailerSize is the trailer's length in bytes.
const trailerSize = len(TrailerMagic) + 16

// buildID is the Go build ID of the launcher appended to this binary, set by
// the Makefile (-ldflags -X); empty in a binary built without it.
var buildID string

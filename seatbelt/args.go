package seatbelt

import "strings"

// SandboxExec is the only sandbox-exec autobox runs: an absolute path, so
// nothing earlier on PATH can stand in for it.
const SandboxExec = "/usr/bin/sandbox-exec"

// Args returns the full argv that runs argv under profile:
//
//	/usr/bin/sandbox-exec -p PROFILE -D NAME=path ... [--] argv...
//
// params are NAME=path strings as ExecProfile and WorkerProfile return them;
// each goes in its own argv element, so no path is ever parsed as profile
// text or split by a shell.
//
// sandbox-exec reads its options with getopt(3), which stops at the first
// argument that does not start with "-" (macOS getopt does not reorder
// arguments: `sandbox-exec -n no-network ls -l` runs ls -l). A command that
// starts with "/" (Start always passes an absolute path) therefore needs no
// "--", and none is added, so the argv works whatever sandbox-exec does with
// "--". Only a command whose first word starts with "-" gets the "--" that
// getopt needs to stop there.
func Args(profile string, params []string, argv []string) []string {
	out := make([]string, 0, 4+2*len(params)+len(argv))
	out = append(out, SandboxExec, "-p", profile)
	for _, p := range params {
		out = append(out, "-D", p)
	}
	if len(argv) > 0 && strings.HasPrefix(argv[0], "-") {
		out = append(out, "--")
	}
	return append(out, argv...)
}

package jail

import "github.com/autobox-dev/autobox/policy"

// Spec is one command to run in a sandbox through the launcher.
type Spec struct {
	// Argv is the command line. A name without a slash in Argv[0] is looked
	// up in the PATH of Env (absolute entries only; /usr/bin:/bin when Env has
	// no PATH), by the launcher, before it restricts itself; a relative path
	// with a slash is relative to Dir.
	Argv []string
	// Dir is the working directory; "" keeps the supervisor's.
	Dir string
	// Env is the command's entire environment; nil means empty, never the
	// caller's.
	Env []string
	// Sandbox is what the command may touch.
	Sandbox policy.Sandbox
	// Unsafe runs the command without Landlock and seccomp. Only for a server
	// started with the explicit unsafe flag; process-tree handling stays.
	Unsafe bool
}

// Result is how a command ended.
type Result struct {
	// Started is true when the command was executed.
	Started bool
	// SpawnError says why it could not be executed ("" if it was).
	SpawnError string
	// ExitCode is the exit status, -1 if a signal ended the command or it
	// never started.
	ExitCode int
	// Signal is the name of the signal that ended it ("SIGKILL"), or "".
	Signal string
}

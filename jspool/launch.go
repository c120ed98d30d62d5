package jspool

import (
	"os"
)

// workerJail is how the pool starts JS workers on this platform (workerLaunch).
type workerJail struct {
	argv    []string     // command line of a worker (exe first)
	prepare func() error // run on each worker's own thread before it starts one (nil: nothing)
	// start starts a worker with files as its descriptors 0..n-1, from the thread
	// prepare ran on; nil: os.StartProcess with workerSysProcAttr.
	start func(argv, env []string, files []*os.File) (*os.Process, error)
	// isolation is what execute_js results say the code ran in: jail.ModeRoot,
	// jail.ModeUserNS or jail.ModeLandlock, "seatbelt" on macOS, "unjailed".
	isolation string
	// why says, where the jail is weaker than the host's best, why and what would
	// make it whole ("" otherwise).
	why string
	// refusals reads the system calls a worker's filter refused from its stderr
	// (nil: none can be).
	refusals func(stderr []byte) []string
}

// unjailedWorkers are workers without an OS sandbox, V8's isolation alone.
func unjailedWorkers(exe string) *workerJail {
	return &workerJail{argv: []string{exe, "worker", "js", "--unjailed"}, isolation: isolationUnjailed, why: "no OS sandbox for JS workers on this host"}
}

// isolationUnjailed is the isolation of a JS worker without an OS sandbox.
const isolationUnjailed = "unjailed"

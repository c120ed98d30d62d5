package supervisor

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/autobox-dev/autobox/jail"
)

// A JS worker without its jail is a weakening, and every execute_js result it
// affects says so (JSOutput.Unjailed), as does `autobox doctor`: where the
// host lacks what the jail needs (Landlock ABI >= jail.MinLandlockABI and
// seccomp on Linux; any OS sandbox elsewhere), workers start unjailed
// (workerLaunch), and the code they run has V8's isolation alone. A start-up
// warning in the server's log is not enough: nobody reading a result sees it.

// jsJailGap says what JS workers started with argv run without, in a
// sentence; "" when they are jailed.
func jsJailGap(argv []string) string {
	if !slices.Contains(argv, "--unjailed") {
		return ""
	}
	why := fmt.Sprintf("no OS sandbox on %s/%s", runtime.GOOS, runtime.GOARCH)
	if runtime.GOOS == "linux" {
		st := jail.Probe()
		switch {
		case st.LandlockABI == 0:
			why = "this host has no Landlock (" + st.Landlock + ")"
		case st.LandlockABI < jail.MinLandlockABI:
			why = fmt.Sprintf("this host's Landlock is ABI %d, and the jail needs %d", st.LandlockABI, jail.MinLandlockABI)
		case !st.Seccomp:
			why = "this host has no seccomp filters"
		default:
			why = "the server started them so"
		}
	}
	return "the JS worker ran without its jail (" + why + "): the code had V8's isolation alone, with the worker's own access to files, network and system calls"
}

// JSWorkerJailGap is what this server's JS workers run without, for doctor;
// "" when they are jailed.
func (s *Server) JSWorkerJailGap() string { return s.jsGap }

package supervisor

import (
	"log/slog"

	"github.com/autobox-dev/autobox/jail"
)

// workerArgv is the command line of a JS worker. Workers are jailed by themselves
// (see package worker); on a host without Landlock they run unjailed, said loudly.
func workerArgv(exe string, log *slog.Logger) ([]string, error) {
	if st := jail.Probe(); st.LandlockABI < 1 {
		log.Warn("this kernel has no Landlock: JS workers run WITHOUT a filesystem jail (seccomp only is not applied either)")
		return []string{exe, "worker", "js", "--unjailed"}, nil
	}
	return []string{exe, "worker", "js"}, nil
}

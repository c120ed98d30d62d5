// Package goenv is the Go runtime's environment for autobox's own short-lived
// child processes: JS workers and exec launchers. They get nothing of the
// server's environment, only runtime settings that make their start cheaper.
package goenv

// Child is the whole environment of a child process that runs autobox itself
// for one call: GOGC=off with a soft memory limit, so there is no garbage
// collection until the heap nears memLimit (a Go memory-limit string such as
// "48MiB"). Without it the runtime collected once during package
// initialisation, ~1.5 ms of CPU of every start.
//
// GOMAXPROCS is left alone: the runtime reads its cgroup's CPU limit at start
// whether or not it is set (measured: no difference).
func Child(memLimit string) []string {
	return []string{"GOGC=off", "GOMEMLIMIT=" + memLimit}
}

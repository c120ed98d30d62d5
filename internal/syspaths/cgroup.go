package syspaths

import (
	"runtime"

	"github.com/autobox-dev/autobox/policy"
)

// CgroupTree is where a program on Linux finds the cgroups it runs in, and
// from them the limits its runtime sizes its heap and threads by (the JVM,
// Node, Go, .NET): /proc/self/cgroup names the cgroup, /proc/self/mountinfo
// the hierarchy's mount, and the limits are files there (memory.max,
// memory.limit_in_bytes, pids.max, cpu.max).
//
// A policy that reads it gets the tree's own cgroups alone from the Linux
// enforcer, never the host's tree (jail's cgroupview_linux.go): in a private
// root a cgroup namespace rooted at them, mounted read-only; elsewhere
// Landlock reads of their directories. A tree with no cgroup of its own sees
// nothing there: the cgroup it shares with the server holds none of the
// call's limits, and other calls' processes and memory.
const CgroupTree = "/sys/fs/cgroup"

// OwnCgroups adds to sb the read of the tree's own cgroups (CgroupTree), on
// Linux; elsewhere there are none to read.
func OwnCgroups(sb *policy.Sandbox) {
	if runtime.GOOS == "linux" {
		sb.ReadOnly = append(sb.ReadOnly, CgroupTree)
	}
}

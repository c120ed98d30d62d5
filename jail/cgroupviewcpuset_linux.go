package jail

import (
	"os"
	"path/filepath"
)

// The server's side of a command's view of its cgroups (cgroupview_linux.go):
// on cgroup v1 the command gets a cpuset cgroup of its own (cmdCgroups), with
// the CPUs and memory nodes of the server's, so that it limits nothing. The
// JVM takes a v1 host's limits only where it finds the memory, cpu, cpuacct
// and cpuset hierarchies all mounted; a command shown the server's cpuset
// cgroup would see the host's other cgroups below it.

// inheritCpuset gives the new cpuset cgroup dir the CPUs and memory nodes of
// base, its parent: a v1 cpuset cgroup takes no task before it has both. It
// reports whether both were set.
func inheritCpuset(base, dir string) bool {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		b, err := os.ReadFile(filepath.Join(base, f))
		if err != nil || os.WriteFile(filepath.Join(dir, f), b, 0) != nil {
			return false
		}
	}
	return true
}

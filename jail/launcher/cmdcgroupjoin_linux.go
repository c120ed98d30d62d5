package launcher

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// The launcher's side of the command's cgroups (the server makes them,
// jail's cmdcgroup_linux.go): its command thread joins them and lowers pids.max once
// the command is forked.

// joinCmdCgroups, on the launcher's command thread first thing: the thread
// joins the command cgroups whose tasks files the supervisor passed (see
// cmdCgroups; on cgroup v1 the launcher's memory cgroup first, see memCgroups),
// so the command it forks is born in them. Writing 0 to a tasks
// file moves the writing thread only. It returns the command's pids.max, kept
// open for lowerPidsMax, or -1 if none.
func joinCmdCgroups() (pidsMax int) {
	pidsMax = -1
	n, _ := strconv.Atoi(os.Getenv(wire.CgroupsEnv))
	if n <= 0 || n > 8 {
		return pidsMax
	}
	last := wire.FirstCgroupFD + n
	if os.Getenv(wire.PidsMaxEnv) == "1" {
		last--
		pidsMax = last
	}
	for fd := wire.FirstCgroupFD; fd < last; fd++ {
		_, _ = unix.Write(fd, []byte("0"))
		unix.Close(fd)
	}
	return pidsMax
}

// lowerPidsMax, on the command thread right after the fork: the tree's limit
// is l's now, no longer one more for this thread (see cmdCgroups). pidsMax is
// joinCmdCgroups'.
func lowerPidsMax(pidsMax int, l *policy.Limits) {
	if pidsMax < 0 || l == nil || l.Processes <= 0 {
		return
	}
	_, _ = unix.Pwrite(pidsMax, []byte(strconv.Itoa(l.Processes)), 0)
}

package jail

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/procfs"
	"github.com/autobox-dev/autobox/jail/wire"
)

// Who owns a cgroup. Every cgroup a server makes is named for it,
// autobox-p<pid>-n<pid namespace>-<uuid>, so that a later autobox process can
// remove what a server killed with SIGKILL left, and kill what still runs in
// it: nothing autobox makes may outlive it.
//
// A pid names a process only in its pid namespace. A server in a pid
// namespace of its own (`unshare --pid`, a container that shares the host's
// cgroup hierarchy with others) sees none of the host's processes, and if it
// judged the host's servers' cgroups by their pids it would take every one of
// them for stale, kill their commands and idle launchers and remove their
// cgroups under them (a busy run saw a call fail "pids.max: no such device"
// this way). So the name also carries the inode of the maker's pid
// namespace, and a sweep judges only the cgroups made in its own. One made in
// a namespace that is gone stays (empty: a pid namespace's processes die with
// it) until a server whose namespace reuses the inode sweeps it.

// pidNamespace is the inode of this process's pid namespace, 0 where /proc
// does not say.
var pidNamespace = sync.OnceValue(func() uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
})

// cgroupPrefix starts the name of every cgroup a process of pid in this
// process's pid namespace makes. The "p" keeps it apart from names without
// an owner (the probes).
func cgroupPrefix(pid int) string {
	return fmt.Sprintf("%s%d-n%d-", wire.CgroupPrefix, pid, pidNamespace())
}

func cgroupName() string { return cgroupPrefix(os.Getpid()) + uuid.NewString() }

// staleOwner reports whether the cgroup named name was made by an autobox
// process of this pid namespace that is gone. A name of an older autobox,
// without the namespace, is judged by its pid alone.
func staleOwner(name string) bool {
	rest, ok := strings.CutPrefix(name, wire.CgroupPrefix)
	if !ok {
		return false
	}
	owner, rest, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(owner)
	if err != nil || pid <= 0 {
		return false // another naming
	}
	if ns, ok := strings.CutPrefix(rest, "n"); ok {
		ns, _, _ = strings.Cut(ns, "-")
		n, err := strconv.ParseUint(ns, 10, 64)
		if err != nil || n == 0 || n != pidNamespace() {
			return false // another namespace's pid: not this process's to judge
		}
	}
	return !procfs.Running(pid)
}

// sweepStaleCgroups kills (with kill) and removes the cgroups in base whose
// maker is gone (see staleOwner).
func sweepStaleCgroups(base string, kill func(dir string)) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !staleOwner(e.Name()) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		kill(dir)
		removeCgroupDir(dir)
	}
}

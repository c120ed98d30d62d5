package supervisor

import (
	"errors"
	"os"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// Scratch dirs on a tmpfs. Made and removed once per call, a directory on a
// disk costs a journal write, and on an ext4 that has seen many removals a
// mkdir takes hundreds of microseconds; on a tmpfs about one. So, where it is
// safe, a server makes one private directory (0700, this process's alone,
// autobox-scratch-<pid>-<random>) on a tmpfs, $XDG_RUNTIME_DIR or else
// /dev/shm, and each call's scratch dir inside it; else in the temp dir, as
// before. Safe means:
//
//   - what a command writes there is memory, charged to the memory cgroup of
//     its call, whose hard limit (memoryMb) bounds it, and counted in
//     maxWriteMb at its end: only where calls get memory cgroups
//     (jail.Isolations().MemoryCgroups). Without one, a command's writes to a
//     tmpfs would be bounded by nothing (the RSS watchdog does not see tmpfs
//     files, maxWriteMb counts disk writes), where on a disk maxWriteMb holds;
//   - the tmpfs keeps tmpfsFloor free, checked at each dir made: a full
//     /dev/shm sends calls back to the temp dir, and a call at the largest
//     memory limit cannot fill what is left;
//   - it may run programs (no noexec: builds and tests run what they write
//     to TMPDIR), and a world-writable base has the sticky bit, so that no
//     other user can move the private dir away and put a link in its place;
//   - the private dir is made with mkdir, which never follows a link and
//     fails on a name taken, under a random name: a directory or link that
//     another user planted is never used;
//   - not for a root server without namespaces, whose commands run as another
//     uid (jail.CommandCredential) and could not enter a private dir of root's;
//   - not where TMPDIR is set: the user chose where temp files go.

// tmpfsFloor is the free space a tmpfs keeps for scratch dirs to be made on it:
// twice the largest memory limit of a call.
var tmpfsFloor = uint64(2*policy.ExecMaxMemoryMb) << 20

// memoryBounded reports whether calls' memory, tmpfs pages included, is held
// to their limit by a memory cgroup.
var memoryBounded = func() bool { return jail.Isolations().MemoryCgroups }

// tmpfsBases are the tmpfs candidates, in order: $XDG_RUNTIME_DIR (the user's
// own, if set), /dev/shm.
var tmpfsBases = func() []string {
	var b []string
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		b = append(b, d)
	}
	return append(b, "/dev/shm")
}

// tmpfsScratchParent makes this process's private dir for scratch dirs on a
// tmpfs, or says why there is none.
func tmpfsScratchParent() (string, error) {
	if _, set := os.LookupEnv("TMPDIR"); set {
		return "", errors.New("TMPDIR is set")
	}
	if _, _, drop := jail.CommandCredential(); drop {
		return "", errors.New("commands run as another uid")
	}
	if !memoryBounded() {
		return "", errors.New("calls get no memory cgroup to hold their tmpfs writes")
	}
	var errs []error
	for _, base := range tmpfsBases() {
		dir, err := privateDirOn(base)
		if err == nil {
			return dir, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
}

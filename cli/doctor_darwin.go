package cli

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/seatbelt"
)

// platformChecks reports the seatbelt sandbox that exec_command and the JS workers use.
func platformChecks(r *DoctorReport) {
	if err := seatbelt.Available(); err != nil {
		r.add("sandbox-exec", statusMissing, err.Error(), "exec_command is refused; JS workers run without a seatbelt profile")
		return
	}
	r.add("sandbox-exec", statusOK, seatbelt.SandboxExec+" applies profiles", "")
	limitChecks(r)
}

// treeWalkable: on macOS the watchdog finds descendants through gopsutil, which
// MemoryInfo already exercised.
func treeWalkable() error { return nil }

// cloneProbe tries clonefile(2) between two small files in dir.
func cloneProbe(dir string) (fsName string, ok bool, err error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		return "", false, fmt.Errorf("statfs %s: %w", dir, err)
	}
	fsName = unix.ByteSliceToString(sfs.Fstypename[:])
	src, dst, cleanup, err := probeFiles(dir)
	if err != nil {
		return fsName, false, err
	}
	defer cleanup()
	err = unix.Clonefile(src.Name(), dst, unix.CLONE_NOFOLLOW)
	switch {
	case err == nil:
		return fsName, true, nil
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EXDEV):
		return fsName, false, nil
	}
	return fsName, false, fmt.Errorf("clonefile: %w", err)
}

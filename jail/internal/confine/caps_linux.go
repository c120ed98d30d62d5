package confine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Securebits that keep a root-owned sandbox from ever holding capabilities again:
// root gets no capabilities on exec (NOROOT), setuid transitions change nothing
// (NO_SETUID_FIXUP), ambient capabilities cannot be raised, and all of it is locked.
const lockedSecurebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropCapabilities empties every capability set of the calling thread. A server run
// as root would otherwise hand its sandboxed children CAP_SYS_PTRACE, CAP_DAC_OVERRIDE
// and the rest: Landlock still confines the filesystem, but other protections (for
// example reading another root process's /proc/<pid>/environ) yield to capabilities.
// A thread that has no capabilities and is not root has nothing to drop. bounded
// says dropBounding already ran on this thread.
func dropCapabilities(bounded bool) error {
	if held, err := holdsCapabilities(); err != nil || !held {
		return err
	}
	if !bounded {
		if err := dropBounding(); err != nil {
			return err
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// holdsCapabilities reports whether the calling thread has capabilities to drop:
// any at all, or root's (which an exec would give back).
func holdsCapabilities() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("capget: %w", err)
	}
	none := data[0] == (unix.CapUserData{}) && data[1] == (unix.CapUserData{})
	return !none || unix.Geteuid() == 0, nil
}

// dropBounding is the first half of dropCapabilities, which a pooled launcher does
// while it waits (about 40 system calls): it locks the securebits and empties the
// bounding and ambient sets. What the thread may do now is unchanged (its
// effective set is), only what an exec could gain. Doing it twice is harmless.
func dropBounding() error {
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
		return fmt.Errorf("setting securebits: %w", err)
	}
	for c := 0; ; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			break // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	return nil
}

// HasCapSysAdmin reports whether the calling thread holds CAP_SYS_ADMIN.
func HasCapSysAdmin() bool { return HasCap(unix.CAP_SYS_ADMIN) }

// HasCap reports whether the calling thread holds capability c.
func HasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

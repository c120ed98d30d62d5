package jspool

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// serverHasCapabilities reports whether the server runs with effective capabilities
// (as root does), which its host filesystem calls for a JS call must not use.
var serverHasCapabilities = sync.OnceValue(func() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true // unknown: drop them anyway, and let capset say what fails
	}
	return data[0].Effective != 0 || data[1].Effective != 0
})

// asCaller makes the calling goroutine's file access that of a command of the call,
// which runs with no capabilities: permission bits bind even when the server runs
// as root, so a directory nobody may enter is closed to the bridge as it is to a
// command. Capabilities belong to a thread: the goroutine is locked to its thread and
// must never unlock it, so the thread ends with the goroutine and no other goroutine
// ever runs on it (threads the runtime starts meanwhile come from a clean one).
func asCaller() error {
	if !serverHasCapabilities() {
		return nil
	}
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("bridge: capget: %w", err)
	}
	data[0].Effective, data[1].Effective = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("bridge: dropping capabilities: %w", err)
	}
	return nil
}

//go:build linux

package main

import (
	"fmt"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// onProcess does one thing to process pid (0: the probe itself) that needs
// only a matching uid (issue 20 item 1): lower a resource limit (as, nofile:
// the soft limit to the value given, the hard one kept), or change its
// priority, CPUs, scheduling class or I/O class.
func onProcess(what string, pid int, args []string) error {
	switch what {
	case "as", "nofile":
		res := map[string]int{"as": unix.RLIMIT_AS, "nofile": unix.RLIMIT_NOFILE}[what]
		soft, err := strconv.ParseUint(args[0], 10, 64)
		if err != nil {
			return err
		}
		hard, err := strconv.ParseUint(args[1], 10, 64)
		if err != nil {
			return err
		}
		if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: soft, Max: hard}, nil); err != nil {
			return err
		}
	case "nice":
		if err := unix.Setpriority(unix.PRIO_PROCESS, pid, 19); err != nil {
			return err
		}
	case "affinity":
		var set unix.CPUSet
		set.Set(0)
		if err := unix.SchedSetaffinity(pid, &set); err != nil {
			return err
		}
	case "idle":
		const schedIdle = 5
		var param struct{ prio int32 }
		if _, _, e := unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(pid), schedIdle, uintptr(unsafe.Pointer(&param))); e != 0 {
			return e
		}
	case "ioidle":
		const whoProcess, classIdle = 1, 3
		if _, _, e := unix.Syscall(unix.SYS_IOPRIO_SET, whoProcess, uintptr(pid), classIdle<<13); e != 0 {
			return e
		}
	default:
		return fmt.Errorf("unknown change %q", what)
	}
	fmt.Println("ok", what, pid)
	return nil
}

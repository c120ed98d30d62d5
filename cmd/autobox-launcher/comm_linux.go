package main

import (
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nameAfterArgv0 gives the process the name an exec of argv[0] (the main
// binary) gives: started from /proc/self/fd/N, the kernel names it "N", and
// ps and whatever finds autobox's processes by name would not know it.
func nameAfterArgv0(args []string) {
	name := "autobox"
	if len(args) > 0 {
		name = filepath.Base(args[0])
	}
	if len(name) > 15 { // the kernel's TASK_COMM_LEN, less its NUL
		name = name[:15]
	}
	if p, err := unix.BytePtrFromString(name); err == nil {
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
	}
}

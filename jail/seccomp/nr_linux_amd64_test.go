package seccomp

import "golang.org/x/sys/unix"

var x86Only = map[string]uint32{"iopl": unix.SYS_IOPL, "ioperm": unix.SYS_IOPERM}

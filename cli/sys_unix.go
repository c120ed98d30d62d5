//go:build linux || darwin

package cli

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// isTerminal reports whether f (a stream given to Main) is a terminal: only an
// *os.File can be, and only if the terminal ioctl answers for it.
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(fd.Fd()), getTermios)
	return err == nil
}

// signalNumber maps a signal name ("SIGKILL") to its number, 0 if unknown.
func signalNumber(name string) int {
	return int(unix.SignalNum(name))
}

// osDetail names the platform and the kernel release, for doctor.
func osDetail() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Sprintf("%s/%s, uname: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	return fmt.Sprintf("%s/%s, %s %s", runtime.GOOS, runtime.GOARCH, unix.ByteSliceToString(u.Sysname[:]), unix.ByteSliceToString(u.Release[:]))
}

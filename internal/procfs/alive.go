//go:build unix

package procfs

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Running reports whether a process with this pid runs (kill(pid, 0): EPERM
// means one exists that this process may not signal). A zombie does not: it
// has ended and only waits for its parent to reap it, which an MCP client
// that killed its server may do late. Autobox names what it leaves on disk
// after its pid, so that a later process can remove what one that is gone
// left; a reused pid only keeps such a leftover longer. Where /proc cannot be
// read (macOS), a process that exists runs.
func Running(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie reports whether /proc says pid has ended unreaped.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

package mcpstdio

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// A client that closes its end of stdout.
//
// Go kills a program that writes to a broken pipe on fd 1 or 2 with SIGPIPE, silently,
// unless the program asks for the signal itself (os/signal). The transport asks (at
// Connect), so the write fails with EPIPE instead; it then says on stderr that the
// client has gone and ends the session as if stdin had closed: the session's
// Read returns EOF and direct calls in flight are cancelled, so a server ends its
// session and can exit with status 0. The handler is not inherited by the commands
// a server starts (exec resets caught signals), so a command in a pipeline still
// dies of SIGPIPE as it should.
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// lost ends the session after a write to the client failed.
func (c *lineConn) lost(err error) {
	c.lostOnce.Do(func() {
		name := c.name
		if name == "" {
			name = filepath.Base(os.Args[0])
		}
		fmt.Fprintf(os.Stderr, "%s: cannot write to the client (%v): it closed its end of stdout; ending the session\n", name, err)
		c.Close()
	})
}

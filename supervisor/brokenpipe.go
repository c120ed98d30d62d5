package supervisor

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// A client that closes its end of stdout.
//
// Go kills a program that writes to a broken pipe on fd 1 or 2 with SIGPIPE, silently,
// unless the program asks for the signal itself (os/signal). The stdio server asks, so
// the write fails with EPIPE instead; the transport then says on stderr that the client
// has gone and ends the session as if stdin had closed: calls in flight are cancelled,
// sessions ended, and the server exits with status 0. The handler is not inherited by
// the commands and workers the server starts (exec resets caught signals), so a
// command in a pipeline still dies of SIGPIPE as it should.
func catchSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// lost ends the session after a write to the client failed.
func (c *lineConn) lost(err error) {
	c.lostOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "autobox: cannot write to the client (%v): it closed its end of stdout; ending the session\n", err)
		c.Close()
	})
}

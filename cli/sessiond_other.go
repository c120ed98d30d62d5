//go:build !linux

package cli

import (
	"errors"
	"fmt"

	"github.com/autobox-dev/autobox/supervisor"
)

// errNoSessions: sessions run in the Linux launcher only.
var errNoSessions = errors.New("sessions (exec --yield) need the Linux launcher: on this platform run the command without --yield")

func (e *env) sessionCall(tool string, in any) (*supervisor.SessionOutput, error) {
	return nil, errNoSessions
}

func (e *env) serveSessions(readyFD int) int {
	fmt.Fprintf(e.stderr, "autobox session serve: %v\n", errNoSessions)
	return ExitRefused
}

package supervisor

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/autobox-dev/autobox/cmdrun"
)

// TestRunnerRefusalWords: the runner's typed refusals read as exec_command has
// always said them, byte for byte, with ErrSandboxUnavailable kept for
// callers that branch on it (the CLI's doctor); other errors pass unchanged.
func TestRunnerRefusalWords(t *testing.T) {
	why := errors.New("landlock: not supported by this kernel")
	other := errors.New("starting the launcher: no such file")
	for _, c := range []struct {
		in          error
		want        string
		unavailable bool
	}{
		{&cmdrun.UnavailableError{Why: why}, "sandbox unavailable: exec_command refused: landlock: not supported by this kernel (autobox serve --unsafe-no-sandbox runs commands without an OS sandbox)", true},
		{fmt.Errorf("pool: %w", &cmdrun.UnavailableError{}), "sandbox unavailable: exec_command has no OS sandbox on " + runtime.GOOS + "/" + runtime.GOARCH, true},
		{cmdrun.ErrClosed, "the server is shutting down", false},
		{other, other.Error(), false},
	} {
		got := runnerRefusal(c.in)
		if got.Error() != c.want || errors.Is(got, ErrSandboxUnavailable) != c.unavailable {
			t.Errorf("runnerRefusal(%v) = %q (sandbox unavailable: %v), want %q (%v)", c.in, got, errors.Is(got, ErrSandboxUnavailable), c.want, c.unavailable)
		}
	}
	// The typed refusal itself is ErrSandboxUnavailable, and carries why.
	if err := error(&cmdrun.UnavailableError{Why: why}); !errors.Is(err, cmdrun.ErrSandboxUnavailable) || !errors.Is(err, why) {
		t.Errorf("%v: not ErrSandboxUnavailable or not wrapping why", err)
	}
}

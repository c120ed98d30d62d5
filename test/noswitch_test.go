package test

import (
	"strings"
	"testing"
)

// TestNoLimitsSwitchInEnvironment (issue 35 item 8): no variable of the
// server's environment turns the limits off: AUTOBOX_BENCH_NO_LIMITS=1 used
// to stop maxProcesses, maxWriteMb and cpuMs being enforced, without a word;
// the benchmark now builds a binary of its own for that. A file past
// maxWriteMb 1 is held under it as without it (EFBIG, or the watchdog's kill);
// the same write under maxWriteMb 10 is the control.
func TestNoLimitsSwitchInEnvironment(t *testing.T) {
	requireSandbox(t)
	s := startEnv(t, []string{"AUTOBOX_BENCH_NO_LIMITS=1"})
	write := bash(`head -c 3000000 /dev/zero > big && echo wrote`)
	o, _ := s.exec(map[string]any{"command": write, "maxWriteMb": 1})
	// Held either way: the file stops at EFBIG, or the watchdog ends the call.
	if o.Stdout == "wrote\n" || !strings.Contains(o.Stderr, "File too large") && !strings.HasPrefix(o.Stderr, "disk limit exceeded (") {
		t.Errorf("3 MB under maxWriteMb 1 with AUTOBOX_BENCH_NO_LIMITS=1: %+v", o)
	}
	if o, _ := s.exec(map[string]any{"command": write, "maxWriteMb": 10}); o.Stdout != "wrote\n" {
		t.Errorf("3 MB under maxWriteMb 10: %+v", o)
	}
}

package test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A server paused (SIGSTOP) past its calls' time limits, then resumed: a command that
// ended well within its limit while the server was stopped is answered with its own
// end (exit 0, not killed), and a command still running at the limit is killed for
// the timeout as ever (the positive control).
func TestPausedServer(t *testing.T) {
	quick := 6
	if os.Getenv("AUTOBOX_SOAK") != "" {
		quick = 24
	}
	s := start(t)
	type answer struct {
		o    execOut
		slow bool
	}
	answers := make(chan answer, quick+1)
	var wg sync.WaitGroup
	for i := range quick + 1 {
		slow := i == quick
		cmd := "sleep 2"
		if slow {
			cmd = "sleep 30"
		}
		wg.Go(func() {
			o, _ := s.exec(map[string]any{"command": []string{"bash", "-c", cmd}, "timeoutMs": 5000})
			answers <- answer{o, slow}
		})
	}
	// Pause the server, for longer than the limit, once half the commands run
	// (each sleep is a process of its tree; on a loaded machine the first may end
	// before the last starts, and those not running at the pause change nothing).
	pid := s.cmd.Process.Pid
	most := 0
	for deadline := time.Now().Add(30 * time.Second); most < (quick+1)/2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("at most %d of %d commands ran at once", most, quick+1)
		}
		most = max(most, sleeping(pid))
	}
	syscall.Kill(pid, syscall.SIGSTOP)
	t.Logf("server paused with %d of %d commands running", sleeping(pid), quick+1)
	time.Sleep(7 * time.Second)
	syscall.Kill(pid, syscall.SIGCONT)
	wg.Wait()
	close(answers)
	for a := range answers {
		switch {
		case a.slow && (!a.o.Killed || !strings.Contains(a.o.Stderr, "timeout after 5000ms")):
			t.Errorf("sleep 30 with a 5 s limit: killed %v, stderr %q; want killed for the timeout", a.o.Killed, a.o.Stderr)
		case !a.slow && (a.o.Killed || a.o.code() != 0):
			t.Errorf("sleep 2 with a 5 s limit, server paused 7 s: killed %v, exit %d, stderr %q; want its own exit 0", a.o.Killed, a.o.code(), a.o.Stderr)
		}
	}
}

// sleeping counts the sleep processes among pid's descendants.
func sleeping(pid int) int {
	n := 0
	for _, p := range descendants(pid) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); err == nil && strings.TrimSpace(string(b)) == "sleep" {
			n++
		}
	}
	return n
}

package supervisor

import (
	"os"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/autobox-dev/autobox/policy"
)

// tree is a running command and everything it started.
type tree interface {
	Pid() int
	// Wait returns once the command and every process it started are gone (the
	// enforcer kills what is left after the command exits), so nothing outlives a call.
	Wait() (policy.Exit, error)
	// Kill ends the whole tree; safe to call more than once and after exit.
	Kill()
}

// runner starts commands under the platform's OS sandbox (jail on Linux, seatbelt on
// macOS) or refuses where there is none.
type runner interface {
	start(c *policy.Command, stdout, stderr *os.File) (tree, error)
	close()
}

// rssPoll is how often the watchdog measures a command tree.
const rssPoll = 10 * time.Millisecond

// watchRSS polls the resident memory of root and all its descendants and calls
// breach once when it passes limit. The returned func stops the watchdog.
func watchRSS(root int, limit int64, breach func(rss int64)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(rssPoll)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if rss := treeRSS(int32(root)); rss > limit {
					breach(rss)
					return
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// treeRSS sums the RSS (read by gopsutil) of pid and its descendants.
func treeRSS(pid int32) int64 {
	var total int64
	for _, p := range descendantsOf(pid) {
		if mi, err := (&process.Process{Pid: p}).MemoryInfo(); err == nil {
			total += int64(mi.RSS)
		}
	}
	return total
}

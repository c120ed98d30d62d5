package supervisor

import (
	"os"
	"sync"
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
// macOS) or refuses where there is none. memory is the tree's memory limit in bytes:
// the RSS watchdog (watchRSS) enforces it everywhere, and the jail also sets it as
// the kernel's hard limit where the host lets it make cgroups.
type runner interface {
	start(c *policy.Command, memory int64, stdout, stderr *os.File) (tree, error)
	close()
}

// oomKilled reports whether the kernel's OOM killer ended a process of t for going
// over the kernel's limit (only trees with one can tell).
func oomKilled(t tree) bool {
	k, ok := t.(interface{ OOMKilled() bool })
	return ok && k.OOMKilled()
}

// rssPoll is how often the watchdog measures a command tree; rssPollLong, once
// the tree has been watched for rssPollLongAfter, which only sessions reach. A
// measurement walks the tree in /proc (~0.3 ms for a launcher and one command):
// 16 sessions at rssPoll took 60% of a core.
const (
	rssPoll          = 10 * time.Millisecond
	rssPollLong      = 100 * time.Millisecond
	rssPollLongAfter = 30 * time.Second
)

// watchRSS polls the resident memory of root and all its descendants and calls
// breach once when it passes limit. The returned func stops the watchdog; once it has
// returned, breach is not running and will not be called. A timer, not a goroutine:
// a call shorter than one poll costs no goroutine start or stop hand-off.
func watchRSS(root int, limit int64, breach func(rss int64)) (stop func()) {
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock() // t is set before the first tick reads it
	defer mu.Unlock()
	long := time.Now().Add(rssPollLongAfter)
	t = time.AfterFunc(rssPoll, func() {
		rss := treeRSS(int32(root))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stopped:
		case rss > limit:
			breach(rss)
		case time.Now().After(long):
			t.Reset(rssPollLong)
		default:
			t.Reset(rssPoll)
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
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

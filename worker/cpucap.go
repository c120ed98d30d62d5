//go:build cgo && (linux || darwin)

package worker

import (
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/internal/rlimit"
)

// capCPU caps the worker's CPU time at what it used so far plus the call's time
// limit (RLIMIT_CPU, soft and hard, in whole seconds, rounded up): a worker that
// spends more CPU than its call may last, on however many of V8's threads, is
// killed by the kernel (SIGKILL at the hard limit; the Go runtime ignores the
// SIGXCPU before it), even if the supervisor that would kill it at its deadline
// is stuck. The supervisor reports it as the time limit.
func capCPU(timeoutMs int) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	secs := uint64((used + time.Duration(timeoutMs)*time.Millisecond + time.Second - 1) / time.Second)
	_ = rlimit.Set(syscall.RLIMIT_CPU, secs, secs)
}

package launcher

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/rlimit"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

// The process limit of a user-namespace launcher without a pids cgroup (an
// ordinary user's server): RLIMIT_NPROC, which since Linux 5.14 the kernel
// checks against the tasks of the caller's uid in the caller's user
// namespace. That namespace holds this launcher and its command's tree alone,
// so the limit is the launcher's own threads at the fork, less its command
// thread (which exits once the command runs), plus maxProcesses: a fork past
// it fails with EAGAIN, as under a pids cgroup.
//
// The launcher's threads and the command's processes share that count, and
// the limit binds the launcher too (rlimits belong to a process; see
// applyRlimits). So the launcher must make no thread once the limit is set:
// each would take a process from the command (a tree of maxProcesses less one
// was refused its last fork on a loaded machine), and a thread its runtime
// cannot make is fatal to it. The Go runtime makes one in two ways, both
// closed here before the count:
//
//   - A P with work and no thread, when it finds no idle thread: the launcher
//     first makes spareThreads threads and waits until they are back on the
//     runtime's idle list, so that they are counted idle, not still handing
//     their P on.
//   - Starting the world after a stop (a collection, GOMAXPROCS) gives each P
//     with work a new thread, without looking at the idle ones: the launcher
//     keeps one P (runtime.GOMAXPROCS(1)), which the thread that stopped the
//     world holds. The launcher's work is waiting on descriptors and copying
//     a few streams; one P does it.
//
// Measured with the kernel's task_newtask tracepoint under load (three CPU
// burners on two cores, TestNativeLimits): 36 of 81 launchers made one or two
// threads within 3 ms after the fork before; none of 160 after.

// warmThreads makes spareThreads idle threads in the runtime, ahead of the
// process limit (see applyNproc and applyHostNproc), and returns once they
// are idle. In a user-namespace launcher without a pids cgroup it first
// leaves the runtime one P.
func (t *cmdThread) warmThreads() {
	t.threadsWarm = true
	if inUserNS && t.pidsMax < 0 {
		runtime.GOMAXPROCS(1)
	}
	var locked, idle sync.WaitGroup
	release := make(chan struct{})
	for range spareThreads {
		locked.Add(1)
		idle.Add(1)
		go func() {
			runtime.LockOSThread() // a thread of its own each, all at once
			locked.Done()
			<-release
			runtime.UnlockOSThread()
			idle.Done() // the thread goes to the idle list when this returns
		}()
	}
	locked.Wait()
	close(release)
	idle.Wait()
	// Let the last of them return and its thread park.
	for range spareThreads {
		runtime.Gosched()
	}
}

// spareThreads is how many idle threads a launcher makes before its process
// limit is set: its Go runtime may want a thread later (a goroutine blocked
// in a system call: the control socket's reader, the exit frame's write),
// and a thread it cannot make is fatal to it.
const spareThreads = 4

// applyNproc makes maxProcesses a kernel limit in a user-namespace launcher
// without a pids cgroup (see the top of this file). Like the other rlimits it
// is set on the launcher right before the fork, soft and hard (the command
// cannot raise it back).
func (t *cmdThread) applyNproc(l *policy.Limits) error {
	if !inUserNS || l == nil || l.Processes <= 0 || t.pidsMax >= 0 || !confine.NprocPerUserNS() {
		return nil
	}
	if !t.threadsWarm {
		t.warmThreads() // a launcher that was not prepared
	}
	tasks, err := ownTasks()
	if err != nil {
		return err
	}
	n := uint64(l.Processes + tasks - 1)
	if err := rlimit.Set(unix.RLIMIT_NPROC, n, n); err != nil {
		return fmt.Errorf("RLIMIT_NPROC %d: %w", n, err)
	}
	t.nproc = int(n)
	return nil
}

// ownTasks counts the threads of this process: num_threads, the 20th field
// of /proc/self/stat (one read; listing /proc/self/task took ~0.3 ms on the
// call's path).
func ownTasks() (int, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, fmt.Errorf("counting this launcher's threads: %w", err)
	}
	// Fields after the command name, which may hold anything but ends at the
	// last ')': state is the 3rd field, num_threads the 20th.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 18 {
		return 0, fmt.Errorf("counting this launcher's threads: /proc/self/stat is %q", b)
	}
	n, err := strconv.Atoi(f[17])
	if err != nil || n < 1 {
		return 0, fmt.Errorf("counting this launcher's threads: num_threads %q", f[17])
	}
	return n, nil
}

package cmdrun

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/policy"
)

// Limits are what Enforce holds a tree to beyond its sandbox.
type Limits struct {
	// Memory is the resident memory of the whole tree in bytes; 0: none.
	Memory int64
	// Command are the limits the command was given (policy.Command.Limits):
	// the watchdog holds the tree to its processes, bytes written and CPU time
	// where the kernel does not, and a kill at its RLIMIT_CPU gets its reason.
	// nil: none of them.
	Command *policy.Limits
	// Names are the limits' names in the texts of kills: the tools' parameters
	// (memoryMb) or the command line's flags (--max-processes).
	Names watchdog.Names
	// Clock, if not nil, is started for Timeout and kills the tree for
	// KilledTimeout when it fires (unless the tree had ended by then).
	Clock   *Clock
	Timeout time.Duration
}

// watched are the limits the watchdog holds a tree to.
func (l Limits) watched() watchdog.Limits {
	wl := watchdog.Limits{Memory: l.Memory, Written: -1}
	if c := l.Command; c != nil {
		wl.Processes, wl.Written, wl.CPU = c.Processes, c.WriteBytes, c.CPU
	}
	return wl
}

// Run is a started tree held to its limits, killed at most once, for the
// first reason given.
type Run struct {
	tree   Tree
	limits Limits
	watch  *watchdog.Watch
	once   sync.Once
	reason Reason
}

// Enforce holds t to l until Wait: the clock (if any) and the watchdog kill it
// at the first limit it passes, with that limit's reason.
func Enforce(t Tree, l Limits) *Run {
	r := &Run{tree: t, limits: l}
	if l.Clock != nil {
		l.Clock.Start(l.Timeout, r.timeUp)
	}
	wl := l.watched()
	o := watchdog.Options{ExcludeRoot: rootIsLauncher}
	if k, ok := t.(watchdog.Kernel); ok {
		o.Kernel = k
	}
	// Without a memory cgroup, nothing else counts memory held in memfds.
	if m, ok := t.(memoryCgroupTree); ok && runtime.GOOS == "linux" && l.Memory > 0 {
		o.Memfds = !m.MemoryCgroup()
	}
	r.watch = watchdog.Start(t.Pid(), wl, o, func(b watchdog.Breach) {
		r.Kill(Reason{breachKinds[b.Kind], b.Reason(wl, l.Names)})
	})
	return r
}

// Kill ends the tree for reason, unless it was killed already (the first
// reason stands) or Wait has settled how it ended.
func (r *Run) Kill(reason Reason) {
	r.once.Do(func() {
		r.reason = reason
		r.tree.Kill()
	})
}

// End is how a run ended.
type End struct {
	Exit policy.Exit // as the tree's Wait returned it
	Err  error       // the tree's Wait's error
	// KilledBy is why the tree was killed (Kind "": it was not): by Kill, at a
	// limit of the watchdog or the clock, or by the kernel at its memory
	// cgroup's limit or RLIMIT_CPU.
	KilledBy Reason
	// Usage is what the tree used: the most the watchdog saw, merged with what
	// its enforcer accounted.
	Usage policy.Usage
}

// Wait waits for the tree to be gone, stops its clock and watchdog, and tells
// how it ended. No kill comes after Wait has returned.
func (r *Run) Wait() End {
	res, err := r.tree.Wait()
	if r.limits.Clock != nil {
		r.limits.Clock.Stop()
	}
	watched := r.watch.Stop()
	r.once.Do(func() {})
	e := End{Exit: res, Err: err, KilledBy: r.reason, Usage: watched.Merge(treeUsage(r.tree, res))}
	// A launcher that died among OOM kills in the call's cgroup was one of
	// them (a command may lower its processes' OOM scores to the launcher's
	// where the enforcer cannot pin them): the limit is the answer.
	if e.KilledBy.Kind == "" && oomKilled(r.tree) {
		e.KilledBy = Reason{KilledMemory, fmt.Sprintf("memory limit exceeded (the kernel's cgroup limit of %s %d; killed by the OOM killer)", r.limits.Names.Memory, r.limits.Memory>>20)}
	}
	if c := r.limits.Command; e.KilledBy.Kind == "" && c != nil && c.CPU > 0 && res.Signal == "SIGXCPU" {
		// The kernel ended a process at its RLIMIT_CPU (SIGXCPU): it passed the
		// whole seconds of the CPU limit on its own.
		ms := c.CPU.Milliseconds()
		e.KilledBy = Reason{KilledCPU, fmt.Sprintf("cpu limit exceeded (a process used the %d s of RLIMIT_CPU that %s %d gives each; killed by the kernel)", (ms+999)/1000, r.limits.Names.CPU, ms)}
	}
	return e
}

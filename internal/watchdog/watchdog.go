// Package watchdog polls a process tree for the limits the kernel does not
// enforce for it (or not everywhere): resident memory, processes and threads,
// bytes written, CPU time. It reports the first limit the tree passes, once,
// and measures what the tree used (policy.Usage) as it goes. One poller per
// tree measures everything in one walk of it.
//
// Cost is bounded: each poll walks the tree once (on Linux two small /proc
// files per process, whatever the size of the files the tree writes), and the
// next poll comes after Interval or five times as long as this one took,
// whichever is longer, so the watchdog spends at most a fifth of a CPU on a
// tree however large it grows (a fork bomb's, say). A tree watched for longer
// than LongAfter (a session, a task's harness, a call of minutes) is
// measured every LongInterval at most often: sixteen idle sessions took 18% of
// a core measured every 10 ms, 7% every 100 ms.
package watchdog

import (
	"fmt"
	"sync"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// Interval is how often a small tree is measured; LongInterval, once it has
// been watched for LongAfter.
const (
	Interval     = 10 * time.Millisecond
	LongInterval = 100 * time.Millisecond
	LongAfter    = 30 * time.Second
)

// Limits are what the watchdog holds a tree to.
type Limits struct {
	Memory    int64         // resident memory of the tree in bytes; 0: none
	Processes int           // processes and threads alive at once; 0: none
	Written   int64         // bytes written to files; negative: none
	CPU       time.Duration // CPU time of the tree; 0: none
}

// WriteSlack is how far past Limits.Written the count of bytes written may go
// before the watchdog kills: the kernel counts against a process the pages of
// the filesystem's own bookkeeping its writes dirty (bitmaps, inode tables,
// directory blocks: a few pages per file on ext4), and a memory cgroup's tmpfs
// count lags by its per-CPU batches. Without it a file of exactly the limit,
// which RLIMIT_FSIZE lets be written, killed the command for those pages. It is
// 1/64 of the limit and 256 KB.
func WriteSlack(limit int64) int64 {
	if limit < 0 {
		return 0
	}
	return limit/64 + 256<<10
}

// Kind is the limit a tree passed.
type Kind int

const (
	Memory Kind = iota + 1
	Processes
	Disk
	CPU
)

// Breach is the first limit a tree passed, and by how much.
type Breach struct {
	Kind Kind
	// Value is what was measured: bytes (Memory, Disk), processes and threads
	// alive (Processes), or forks the kernel refused (Processes with Refused).
	Value int64
	// CPU is the tree's CPU time, for a CPU breach.
	CPU time.Duration
	// Refused: the kernel refused policy.ForkRefusalsToKill forks at the limit
	// (it holds the tree to it, so the tree never passes it).
	Refused bool
	// Held: the tree stayed at its limit for CeilingHold, where the kernel
	// refuses forks past it without counting them.
	Held bool
	// Hidden is, for a Disk breach, the process whose bytes written the
	// kernel would not show (see sample.hidden).
	Hidden     int
	HiddenName string
}

// CeilingHold is how long a tree may stay at its process ceiling (the most
// the kernel lets it have now), where the kernel holds it there without
// counting refused forks, before the call is ended as a fork bomb. A build at
// its limit moves below it as processes end; a fork bomb stays. Limits under
// ceilingMin are left to the call's time limit: a command of a process or two
// sits at such a limit by itself.
const (
	CeilingHold = 500 * time.Millisecond
	ceilingGap  = 100 * time.Millisecond
	ceilingMin  = 8
)

// Kernel is what an enforcer's cgroups tell beyond the per-process figures;
// optional.
type Kernel interface {
	// KernelProcessLimit reports whether the kernel holds the tree to its
	// process limit (then the watchdog ends the call on refused forks, not on
	// its own count, which can be off by a process that moves while it walks).
	KernelProcessLimit() bool
	// ForksRefused is how many forks of the tree the kernel refused at its
	// process limit, or -1 where the kernel refuses them without counting
	// (RLIMIT_NPROC): the watchdog then ends a tree held at its limit for
	// CeilingHold.
	ForksRefused() int
	// Shmem is the bytes of tmpfs the tree holds (writes that per-process
	// accounting misses).
	Shmem() int64
	// IPC is the memory the tree's System V objects hold that no process
	// maps and nothing else counts (0: none, or a memory cgroup counts it).
	IPC() int64
	// ProcessCeiling is, where ForksRefused is -1, the most processes and
	// threads the tree can have now (0: unknown).
	ProcessCeiling() int
}

// Options say how to read a tree.
type Options struct {
	// ExcludeRoot leaves the root's own memory, CPU time and threads out: it is
	// a launcher that runs the command, not part of it. What it reaped of the
	// tree (the CPU time and writes of its dead children) still counts.
	ExcludeRoot bool
	// Kernel, if not nil, adds what the enforcer's cgroups tell.
	Kernel Kernel
	// MemoryOnly skips what only the other limits and Usage need (bytes
	// written), for a tree watched for its memory alone (a JS worker).
	MemoryOnly bool
	// Memfds counts the memory of the memfds the tree's processes hold open
	// (memfd_linux.go): for a tree without a memory cgroup, which would.
	Memfds bool
}

// Watch is a running watchdog.
type Watch struct {
	root   int
	limits Limits
	opts   Options
	breach func(Breach)
	// kernelCounts: the kernel holds the tree to its process limit.
	kernelCounts bool
	// atCeiling: since when the tree has been at its process limit (zero:
	// it is not), where the kernel does not count refused forks.
	atCeiling     time.Time
	lastAtCeiling time.Time
	mu            sync.Mutex
	stopped       bool
	fired         bool
	timer         *time.Timer
	usage         policy.Usage
	long          time.Time // when LongInterval takes over
	reaped        autoReaped
}

// Start polls the tree of root until Stop, and calls breach once, from the
// poller's goroutine, with the first limit the tree passes. A timer, not a
// goroutine: a call shorter than one poll costs no goroutine start or stop
// hand-off.
func Start(root int, l Limits, o Options, breach func(Breach)) *Watch {
	w := &Watch{root: root, limits: l, opts: o, breach: breach, kernelCounts: o.Kernel != nil && o.Kernel.KernelProcessLimit(), long: time.Now().Add(LongAfter)}
	w.mu.Lock() // timer is set before the first tick reads it
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(Interval, w.tick)
	return w
}

func (w *Watch) tick() {
	start := time.Now()
	procs := map[int]proc{}
	if w.opts.MemoryOnly {
		procs = nil
	}
	s := measure(w.root, how{excludeRoot: w.opts.ExcludeRoot, writes: !w.opts.MemoryOnly, memfds: w.opts.Memfds, procs: procs})
	if procs != nil {
		w.reaped.update(procs)
		s.cpu += w.reaped.cpu
		s.written += w.reaped.written
	}
	if k := w.opts.Kernel; k != nil {
		s.written += k.Shmem()
		s.rss += k.IPC()
		s.cpu = max(s.cpu, kernelCPU(k))
	}
	b, over := w.check(s)
	took := time.Since(start)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.usage = w.usage.Merge(policy.Usage{CPU: s.cpu, MaxRSS: s.rss, Processes: s.tasks, Written: s.written})
	if over {
		w.fired = true
		w.breach(b)
		return
	}
	next := max(Interval, 5*took)
	if start.After(w.long) {
		next = max(next, LongInterval)
	}
	w.timer.Reset(next)
}

// check finds the first limit the sample passed.
func (w *Watch) check(s sample) (Breach, bool) {
	l := w.limits
	switch {
	case l.Memory > 0 && s.rss > l.Memory:
		return Breach{Kind: Memory, Value: s.rss}, true
	case l.Processes > 0 && w.kernelCounts:
		n := w.opts.Kernel.ForksRefused()
		if n >= policy.ForkRefusalsToKill(l.Processes) {
			return Breach{Kind: Processes, Value: int64(n), Refused: true}, true
		}
		if n < 0 && l.Processes >= ceilingMin && w.held(s) {
			return Breach{Kind: Processes, Value: int64(s.tasks), Held: true}, true
		}
	case l.Processes > 0 && s.tasks > l.Processes:
		return Breach{Kind: Processes, Value: int64(s.tasks)}, true
	case l.Processes >= ceilingMin && w.opts.Kernel != nil && w.opts.Kernel.ForksRefused() < 0 && w.held(s):
		// RLIMIT_NPROC on the host's count of the user's tasks: it stops the
		// tree a little past the limit, where the case above ends it, or at
		// the limit, or below it if the user's other tasks grew.
		return Breach{Kind: Processes, Value: int64(s.tasks), Held: true}, true
	}
	switch {
	case l.Written >= 0 && s.hidden != 0:
		return Breach{Kind: Disk, Hidden: s.hidden, HiddenName: s.hiddenName}, true
	case l.Written >= 0 && s.written > l.Written+WriteSlack(l.Written):
		return Breach{Kind: Disk, Value: s.written}, true
	case l.CPU > 0 && s.cpu > l.CPU:
		return Breach{Kind: CPU, CPU: s.cpu}, true
	}
	return Breach{}, false
}

// held reports whether the tree has been at its process ceiling (the most the
// kernel lets it have now) for CeilingHold. A walk of a tree that forks and
// reaps can miss a process: a sample below the ceiling ends the hold only if
// none reached it for ceilingGap.
func (w *Watch) held(s sample) bool {
	now := time.Now()
	if ceiling := w.opts.Kernel.ProcessCeiling(); ceiling > 0 && s.tasks >= ceiling {
		if w.atCeiling.IsZero() {
			w.atCeiling = now
		}
		w.lastAtCeiling = now
		return now.Sub(w.atCeiling) >= CeilingHold
	}
	if now.Sub(w.lastAtCeiling) > ceilingGap {
		w.atCeiling = time.Time{}
	}
	return false
}

// Stop ends the watchdog and returns the most it saw the tree use (the largest
// of each figure over its polls; zero for a tree that ended before the first).
// Once Stop has returned, breach is not running and will not be called.
func (w *Watch) Stop() policy.Usage {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
	return w.usage
}

// sample is one measurement of a tree.
type sample struct {
	rss     int64
	tasks   int
	cpu     time.Duration
	written int64
	// hidden is a process of the tree (not the root) whose bytes written the
	// kernel would not show (0: none). Such a process runs a program its user
	// cannot read (the kernel makes it not dumpable, as the sandbox refuses
	// PR_SET_DUMPABLE 0), and hides from an ordinary user's watchdog what it
	// and the children it reaps write: it ends the call, as a limit that can
	// no longer be held.
	hidden     int
	hiddenName string // its command name
}

// Names are what a caller calls the limits in its texts: the tools' parameters
// (memoryMb) or the command line's flags (--memory).
type Names struct {
	Memory, Processes, Written, CPU string
}

// Reason is the first line of a killed command's stderr: which limit, by how much,
// and who found it. The limits are named by n, in the units of their names (MB,
// ms).
func (b Breach) Reason(l Limits, n Names) string {
	switch b.Kind {
	case Memory:
		return fmt.Sprintf("memory limit exceeded (%d MB RSS > %s %d; RSS watchdog)", b.Value>>20, n.Memory, l.Memory>>20)
	case Processes:
		if b.Refused {
			return fmt.Sprintf("process limit exceeded (%s %d reached; the kernel refused %d forks)", n.Processes, l.Processes, b.Value)
		}
		if b.Held {
			return fmt.Sprintf("process limit exceeded (%s %d reached and held for %v; the kernel refuses forks past it)", n.Processes, l.Processes, CeilingHold)
		}
		return fmt.Sprintf("process limit exceeded (%d processes and threads > %s %d; watchdog)", b.Value, n.Processes, l.Processes)
	case Disk:
		if b.Hidden != 0 {
			return fmt.Sprintf("disk limit exceeded (%s cannot be held: process %d (%q) runs a program its user cannot read, which hides what it writes; watchdog)", n.Written, b.Hidden, b.HiddenName)
		}
		return fmt.Sprintf("disk limit exceeded (%.1f MB written > %s %d; watchdog)", float64(b.Value)/(1<<20), n.Written, l.Written>>20)
	case CPU:
		return fmt.Sprintf("cpu limit exceeded (%d ms CPU > %s %d; watchdog)", b.CPU.Milliseconds(), n.CPU, l.CPU.Milliseconds())
	}
	return "killed"
}

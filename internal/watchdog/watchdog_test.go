//go:build linux

package watchdog

import (
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// watchShell runs script under sh and watches it until it ends, with l and o; it
// returns the breach (Kind 0 without one) and the usage seen.
func watchShell(t *testing.T, script string, l Limits, o Options) (Breach, policy.Usage) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = t.TempDir()
	// A group of its own, ended whole once watched: a breach kills the shell, and
	// its children must not outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	return watchStarted(cmd, l, o)
}

// watchStarted watches a started cmd until it ends, as watchShell.
func watchStarted(cmd *exec.Cmd, l Limits, o Options) (Breach, policy.Usage) {
	breached := make(chan Breach, 1)
	w := Start(cmd.Process.Pid, l, o, func(b Breach) {
		breached <- b
		_ = cmd.Process.Kill()
	})
	_ = cmd.Wait()
	u := w.Stop()
	select {
	case b := <-breached:
		return b, u
	default:
		return Breach{}, u
	}
}

func TestWatchdogBreaches(t *testing.T) {
	none := Limits{Written: -1}
	// Each limit, passed, is found and named; a tree just under it is not. Each
	// script lasts a second or more after what it measures: the watchdog polls,
	// and a loaded machine may run no poll for a while. A script meant to pass its
	// limit lasts a minute, ended by the breach, so no load can outlast it.
	b, u := watchShell(t, "for i in 1 2 3 4 5 6; do sleep 60 & done; wait", Limits{Processes: 4, Written: -1}, Options{})
	if b.Kind != Processes || b.Value < 5 || b.Refused {
		t.Errorf("7 processes past 4: %+v", b)
	}
	if b, u = watchShell(t, "for i in 1 2 3; do sleep 2 & done; wait", Limits{Processes: 4, Written: -1}, Options{}); b.Kind != 0 || u.Processes != 4 {
		t.Errorf("4 processes at 4: %+v, usage %+v", b, u)
	}
	b, u = watchShell(t, "for i in 1 2 3 4 5; do head -c 4000000 /dev/zero > f$i; sleep 0.05; done; sleep 60", Limits{Written: 10 << 20}, Options{})
	if b.Kind != Disk || b.Value <= 10<<20 {
		t.Errorf("20 MB past 10: %+v", b)
	}
	if b, u = watchShell(t, "head -c 4000000 /dev/zero > f; sleep 1", Limits{Written: 10 << 20}, Options{}); b.Kind != 0 || u.Written < 3<<20 {
		t.Errorf("4 MB under 10: %+v, usage %+v", b, u)
	}
	// One file of exactly the limit (what RLIMIT_FSIZE lets through) and a
	// few small files beside it: the filesystem's bookkeeping their writes
	// dirty is within the slack, not a kill; 1 MB past the slack is.
	if b, u = watchShell(t, "head -c 8388608 /dev/zero > f; for i in 1 2 3 4 5 6 7 8; do echo $i > s$i; done; sync; sleep 1", Limits{Written: 8 << 20}, Options{}); b.Kind != 0 || u.Written < 8<<20 {
		t.Errorf("a file of exactly the limit: %+v, usage %+v", b, u)
	}
	over := 8<<20 + WriteSlack(8<<20) + 1<<20
	if b, _ = watchShell(t, fmt.Sprintf("head -c %d /dev/zero > f; sleep 60", over), Limits{Written: 8 << 20}, Options{}); b.Kind != Disk {
		t.Errorf("1 MB past the limit and its slack: %+v", b)
	}
	b, _ = watchShell(t, "while :; do :; done", Limits{CPU: 200 * time.Millisecond, Written: -1}, Options{})
	if b.Kind != CPU || b.CPU <= 200*time.Millisecond {
		t.Errorf("a spin past 200 ms of CPU: %+v", b)
	}
	if b, _ = watchShell(t, "sleep 0.4", Limits{CPU: 200 * time.Millisecond, Written: -1}, Options{}); b.Kind != 0 {
		t.Errorf("a sleep under 200 ms of CPU: %+v", b)
	}
	// Children that are gone still count, in their reaper's figures.
	_, u = watchShell(t, "for i in 1 2 3; do (i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done); done; sleep 1", none, Options{})
	if u.CPU < 50*time.Millisecond {
		t.Errorf("three busy children, reaped: usage %+v", u)
	}
	// ExcludeRoot leaves the root's own memory and threads out.
	_, u = watchShell(t, "sleep 0.2 & wait", none, Options{ExcludeRoot: true})
	if u.Processes != 1 {
		t.Errorf("ExcludeRoot: %+v, want the sleep alone", u)
	}
}

// fakeKernel holds a tree to its process limit and has refused forks.
type fakeKernel struct{ refused atomic.Int64 }

func (k *fakeKernel) KernelProcessLimit() bool { return true }
func (k *fakeKernel) ForksRefused() int        { return int(k.refused.Load()) }
func (k *fakeKernel) Shmem() int64             { return 0 }
func (k *fakeKernel) ProcessCeiling() int      { return 10 }
func (k *fakeKernel) IPC() int64               { return 0 }

// TestWatchdogKernelRefusals: where the kernel holds the tree to its limit, the
// call ends on refused forks (as many as the limit, 8 to 64), not on the
// watchdog's own count.
func TestWatchdogKernelRefusals(t *testing.T) {
	k := &fakeKernel{}
	k.refused.Store(7)
	if b, _ := watchShell(t, "for i in 1 2 3 4 5 6; do sleep 0.3 & done; wait", Limits{Processes: 4, Written: -1}, Options{Kernel: k}); b.Kind != 0 {
		t.Errorf("7 refusals under a limit of 4 (8 needed): %+v", b)
	}
	k.refused.Store(8)
	b, _ := watchShell(t, "sleep 1", Limits{Processes: 4, Written: -1}, Options{Kernel: k})
	if b.Kind != Processes || !b.Refused || b.Value != 8 {
		t.Errorf("8 refusals: %+v", b)
	}
	reason := b.Reason(Limits{Processes: 4}, Names{Processes: "maxProcesses"})
	if reason != "process limit exceeded (maxProcesses 4 reached; the kernel refused 8 forks)" {
		t.Errorf("reason %q", reason)
	}
}

// TestWatchdogBigTreeCost: a walk of a tree of 200 processes costs what it costs,
// and the polls back off so that they take at most a fifth of the time.
func TestWatchdogBigTreeCost(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "for i in $(seq 200); do sleep 20 & done; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The whole group: the sleeps must not outlive the test.
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	// Until the shell has started them all (a loaded machine is slow to).
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if measure(cmd.Process.Pid, how{writes: true}).tasks == 201 {
			break
		}
	}
	for _, memfds := range []bool{false, true} {
		start := time.Now()
		s := measure(cmd.Process.Pid, how{writes: true, memfds: memfds})
		took := time.Since(start)
		if s.tasks != 201 {
			t.Errorf("a tree of 201 processes counted as %d", s.tasks)
		}
		t.Logf("one walk of 201 processes, memfds counted %v: %v (the next poll waits %v)", memfds, took, max(Interval, 5*took))
	}
}

// TestWatchdogCeilingHeld: where the kernel refuses forks past the limit
// without counting them (RLIMIT_NPROC), a tree that stays at its limit is
// ended after CeilingHold; one that only passes by it is not.
func TestWatchdogCeilingHeld(t *testing.T) {
	k := &fakeKernel{}
	k.refused.Store(-1)
	// At the limit (the shell and 9 sleeps) until it is ended: the sleeps last far
	// longer than CeilingHold, so that a loaded machine, slow to fork them, still
	// holds the tree at its limit long enough (the breach kills it at once).
	b, _ := watchShell(t, "for i in 1 2 3 4 5 6 7 8 9; do sleep 60 & done; wait", Limits{Processes: 10, Written: -1}, Options{Kernel: k})
	if b.Kind != Processes || !b.Held {
		t.Errorf("held at its limit: %+v", b)
	}
	if r := b.Reason(Limits{Processes: 10}, Names{Processes: "maxProcesses"}); !strings.Contains(r, "maxProcesses 10 reached and held") {
		t.Errorf("reason %q", r)
	}
	// Well under it for as long: not ended.
	if b, _ := watchShell(t, "for i in 1 2 3; do sleep 1 & done; wait", Limits{Processes: 10, Written: -1}, Options{Kernel: k}); b.Kind != 0 {
		t.Errorf("under its limit: %+v", b)
	}
}

// hostKernel is RLIMIT_NPROC on the host's count of the user's tasks: it
// refuses forks uncounted, but does not hold the tree to its limit exactly
// (KernelProcessLimit false), so the watchdog still counts.
type hostKernel struct{ fakeKernel }

func (k *hostKernel) KernelProcessLimit() bool { return false }
func (k *hostKernel) ForksRefused() int        { return -1 }

// TestWatchdogHostNproc: a tree past its limit is ended by the watchdog's
// count at once; one the kernel holds at its limit, after CeilingHold; one
// under it, not at all.
func TestWatchdogHostNproc(t *testing.T) {
	k := &hostKernel{}
	b, _ := watchShell(t, "for i in 1 2 3 4 5 6 7 8 9 10 11; do sleep 60 & done; wait", Limits{Processes: 10, Written: -1}, Options{Kernel: k})
	if b.Kind != Processes || b.Held || b.Value <= 10 {
		t.Errorf("past its limit: %+v", b)
	}
	if b, _ := watchShell(t, "for i in 1 2 3 4 5 6 7 8 9; do sleep 60 & done; wait", Limits{Processes: 10, Written: -1}, Options{Kernel: k}); b.Kind != Processes || !b.Held {
		t.Errorf("held at its limit: %+v", b)
	}
	if b, _ := watchShell(t, "for i in 1 2 3; do sleep 1 & done; wait", Limits{Processes: 10, Written: -1}, Options{Kernel: k}); b.Kind != 0 {
		t.Errorf("under its limit: %+v", b)
	}
}

package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// proc is a started harness and whatever it starts.
type proc interface {
	// wait returns the harness's exit code (128+signal when a signal ended it).
	wait() (int, error)
	// kill stops the whole tree; it may be called more than once, and after wait.
	kill()
}

// stdio is where a harness reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

const (
	// stopGrace is how long Stop lets `autobox task run` stop its harness before it
	// SIGKILLs that process; killGrace is how long a host harness has between SIGTERM and
	// SIGKILL. Both are bounds, not expectations.
	stopGrace = 10 * time.Second
	killGrace = 5 * time.Second
	pollEvery = 10 * time.Millisecond
)

// runTracked checks argv and o, then runs the process start makes while holding the task's
// run lock, so that Stop, called from any process, finds this one (runHolder) and asks it,
// with SIGTERM, to stop its harness. SIGINT and SIGHUP, and ctx, stop it the same way.
// A second run of the same task fails with ErrRunning before start.
//
//	orchestrator ──spawn──▶ autobox task run ──start──▶ harness tree
//	                          │ holds run.lock (POSIX lock; the kernel knows its pid)
//	autobox task stop ──F_GETLK on run.lock → pid, SIGTERM──▶ │ kill() the tree, exit
//	                  ◀── run.lock released ──────────────────┘ (SIGKILL after stopGrace)
func (w *Worktree) runTracked(ctx context.Context, id string, argv []string, o WrapOptions, start func() (proc, error)) (int, error) {
	o.ID = id
	if err := checkWrap(argv, o); err != nil {
		return -1, err
	}
	p := w.paths(id)
	if err := os.MkdirAll(p.state, 0o700); err != nil {
		return -1, fmt.Errorf("task state: %w", err)
	}
	release, err := lockRun(p.runLock)
	if err != nil {
		return -1, fmt.Errorf("task %s: %w", id, err)
	}
	defer release()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	pr, err := start()
	if err != nil {
		return -1, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
		case <-done:
			return
		}
		pr.kill()
	}()
	return pr.wait()
}

// stopRun stops the `autobox task run` of task id, if one runs, and waits until it is gone.
func (w *Worktree) stopRun(ctx context.Context, id string) error {
	lock := w.paths(id).runLock
	pid := runHolder(lock)
	if pid == 0 {
		return nil
	}
	if err := signalProcess(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stopping task %s (pid %d): %w", id, pid, err)
	}
	if waitUnlocked(ctx, lock, stopGrace) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("stopping task %s (pid %d): %w", id, pid, ctx.Err())
	}
	if err := signalProcess(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing task %s (pid %d): %w", id, pid, err)
	}
	if waitUnlocked(ctx, lock, killGrace) {
		return nil
	}
	return fmt.Errorf("task %s: pid %d still holds %s after SIGKILL", id, pid, lock)
}

// waitUnlocked polls until nobody holds the run lock, for at most d.
func waitUnlocked(ctx context.Context, lock string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for runHolder(lock) != 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(pollEvery)
	}
	return true
}

// guard starts a sandboxed harness with start, between marking the task's worktree for a
// check (expose) and pinning its link files, and checking it when the harness has ended,
// or at once if it did not start.
func (w *Worktree) guard(ctx context.Context, id string, start func(record) (proc, error)) (proc, error) {
	rec, err := w.expose(ctx, id)
	if err != nil {
		return nil, err
	}
	pin(rec)
	pr, err := start(rec)
	if err != nil {
		w.afterRun(id)
		return nil, err
	}
	return &guardedProc{proc: pr, after: func() { w.afterRun(id) }}, nil
}

// guardedProc runs after once the harness has ended, before wait returns.
type guardedProc struct {
	proc
	after func()
	once  sync.Once
}

func (g *guardedProc) wait() (int, error) {
	code, err := g.proc.wait()
	g.once.Do(g.after)
	return code, err
}

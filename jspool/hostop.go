package jspool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// Host filesystem calls made for a JS call (the file bridge) run on a goroutine of
// their own, so the call gets its answer by its deadline even when the kernel does
// not return: a FUSE server that never answers, a hung NFS mount. Such a system call
// cannot be interrupted from Go; its goroutine (and the thread it holds) is
// abandoned, cleans up after itself whenever the kernel lets go, and counts against
// maxStuckHostOps, past which further host filesystem calls are refused at once
// instead of piling up threads.

// maxStuckHostOps bounds the host filesystem calls left blocked by calls that gave up
// on them, across the whole server.
const maxStuckHostOps = 16

var stuckHostOps atomic.Int32

// errHostStuck is returned, without trying, while too many earlier host filesystem
// calls are still blocked.
var errHostStuck = errors.New("refused: earlier host filesystem operations are still blocked in the kernel (an unresponsive mount?)")

// hostOp states: the waiter and the operation agree once on who owns the result.
const (
	opRunning int32 = iota
	opAnswered
	opAbandoned
)

// hostOp runs fn with the file access of a command of the call (asCaller) and returns
// its result, or ctx's error when ctx ends first. fn must
// not touch state it shares with the caller: it may go on after hostOp returned. When
// it does, discard (if not nil) receives what fn made, so nothing it opened leaks.
// fn may watch ctx itself to stop before a step that must not happen late (a rename).
func hostOp[T any](ctx context.Context, fn func() (T, error), discard func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if stuckHostOps.Load() >= maxStuckHostOps {
		return zero, errHostStuck
	}
	type result struct {
		v   T
		err error
	}
	var state atomic.Int32
	done := make(chan result, 1)
	go func() {
		var v T
		err := asCaller()
		if err == nil {
			v, err = fn()
		}
		if state.CompareAndSwap(opRunning, opAnswered) {
			done <- result{v, err}
			return
		}
		if discard != nil && err == nil {
			discard(v)
		}
		stuckHostOps.Add(-1)
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		if state.CompareAndSwap(opRunning, opAbandoned) {
			stuckHostOps.Add(1)
			return zero, ctx.Err()
		}
		r := <-done // fn finished just now: its result is ours after all
		return r.v, r.err
	}
}

// lateError words the error of a host filesystem call that ctx ended.
func lateError(op, p string, err error) error {
	switch {
	case errors.Is(err, errHostStuck):
		return fmt.Errorf("%s: %s: %w", op, p, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %s: the host filesystem did not answer within the call's time limit; the operation was abandoned", op, p)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %s: call cancelled", op, p)
	}
	return nil
}

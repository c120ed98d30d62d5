package jspool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/worker/proto"
)

// Starting a worker: on a thread of its own that restricts itself first
// (onOwnThread), with its pipes and the life pipe as descriptors 3 to 5 (start),
// then waiting for its "ready" frame (spawnReady).

// spawnResult is what a worker's thread hands back: the worker, or why it did
// not start.
type spawnResult struct {
	w   *jsWorker
	err error
}

// onOwnThread runs prepare and then f on a thread of their own, which is retired
// when they return (the goroutine exits locked).
func (p *Pool) onOwnThread(f func() (*jsWorker, error)) (*jsWorker, error) {
	rq := make(chan spawnResult, 1)
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked: the restricted thread dies with this goroutine
		if onMainThread() {
			// The main thread: Go parks it when its locked goroutine exits
			// instead of ending it, so a restriction would stay in the
			// server. Leave it as it was and try another thread.
			runtime.UnlockOSThread()
			go run()
			return
		}
		if p.jail.prepare != nil {
			if err := p.jail.prepare(); err != nil {
				rq <- spawnResult{nil, err}
				return
			}
		}
		w, err := f()
		rq <- spawnResult{w, err}
	}
	go run()
	r := <-rq
	return r.w, r.err
}

func (p *Pool) spawn() (*jsWorker, error) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.wg.Add(1)
		p.starts++
	}
	p.mu.Unlock()
	if closed {
		return nil, errors.New("server is shutting down")
	}
	defer p.wg.Done()
	return p.onOwnThread(p.start)
}

func (p *Pool) start() (*jsWorker, error) {
	toWr, toWw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromWr, fromWw, err := blockingPipe()
	if err != nil {
		closeAll(toWr, toWw)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(toWr, toWw, fromWr, fromWw)
		return nil, err
	}
	w := &jsWorker{toW: toWw, fromW: fromWr, exited: make(chan struct{}), stderr: &boundedBuffer{max: maxWorkerStderr}}
	env := p.env
	if p.throughput {
		env = append(slices.Clip(p.env), workerTimerSlack)
	}
	// stdin and stdout /dev/null (no opens on the restricted thread), stderr to
	// the supervisor, then the pipes and the life pipe (fds 3, 4, 5).
	files := []*os.File{p.devnull, p.devnull, errW, toWr, fromWw, p.life}
	if p.jail.start != nil {
		w.proc, err = p.jail.start(p.jail.argv, env, files)
	} else {
		w.proc, err = os.StartProcess(p.jail.argv[0], p.jail.argv, &os.ProcAttr{Env: env, Files: files, Sys: workerSysProcAttr()})
	}
	closeAll(toWr, fromWw, errW)
	if err != nil {
		closeAll(toWw, fromWr, errR)
		return nil, fmt.Errorf("starting JS worker: %w", err)
	}
	init := &proto.Init{NoWarmup: p.throughput}
	if c := p.preludeCache.Load(); c != nil {
		init.PreludeCache = *c
		w.gotCache = true
		p.cacheGiven.Add(1)
	}
	// Into the pipe's buffer (the cache is a few KB): the worker reads it first.
	initErr := proto.Write(toWw, &proto.Message{Type: proto.TypeInit, Init: init})
	p.mu.Lock()
	p.live[w] = true
	p.mu.Unlock()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(w.stderr, errR)
		close(copied)
	}()
	go func() {
		w.state, _ = w.proc.Wait()
		// A jailed worker cannot fork, so its stderr ends with it; an unjailed
		// one's children may hold it: what they write later is not the worker's.
		select {
		case <-copied:
		case <-time.After(time.Second):
		}
		errR.Close()
		<-copied
		// Reported while still live: Close waits for the live workers, so
		// once it returns, every worker's refusals are in the log.
		p.reportRefusals(w)
		p.mu.Lock()
		delete(p.live, w)
		p.mu.Unlock()
		close(w.exited)
	}()
	if initErr != nil {
		go w.kill()
		return nil, fmt.Errorf("starting JS worker: %w", initErr)
	}
	return w, nil
}

// reportRefusals logs the system calls w's seccomp filter refused, which a
// worker serving a call never makes: a missing entry in its allow-list, or
// code that broke out of V8.
func (p *Pool) reportRefusals(w *jsWorker) {
	if p.jail.refusals == nil {
		return
	}
	if names := p.jail.refusals(w.stderr.Bytes()); len(names) > 0 {
		p.log.Warn("a JS worker made system calls outside its allow-list; they were refused", "calls", strings.Join(names, ","), "pid", w.proc.Pid)
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// spawnReady starts a worker and waits for its "ready" frame.
func (p *Pool) spawnReady(ctx context.Context) (*jsWorker, error) {
	w, err := p.spawn()
	if err != nil {
		return nil, err
	}
	expired, stop := w.watch(ctx, time.Now().Add(10*time.Second))
	m, err := w.read()
	stop()
	if err == nil && m.Type == proto.TypeReady {
		if m.Ready != nil && m.Ready.V8 != "" && p.v8Version.Load() == nil {
			v := m.Ready.V8
			p.v8Version.CompareAndSwap(nil, &v)
		}
		if m.Ready != nil && len(m.Ready.PreludeCache) > 0 && len(m.Ready.PreludeCache) <= proto.MaxPreludeCache {
			c := m.Ready.PreludeCache
			if !w.gotCache {
				p.preludeCache.CompareAndSwap(nil, &c)
			} else {
				// V8 rejected the cache it was given: the one it made replaces it.
				p.preludeCache.Store(&c)
				if p.cacheMisses.Add(1) == 1 {
					p.log.Warn("a JS worker rejected the prelude code cache and compiled the prelude")
				}
			}
		}
		return w, nil
	}
	w.kill()
	switch {
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case expired():
		return nil, errors.New("JS worker did not become ready within 10s")
	}
	return nil, fmt.Errorf("JS worker did not start: %s", w.describeExit(err))
}

// blockingPipe is os.Pipe with a read end in blocking mode (see jsWorker.read): Fd
// puts it there, and reads then wait in read(2) rather than in Go's poller.
func blockingPipe() (r, w *os.File, err error) {
	if r, w, err = os.Pipe(); err == nil {
		r.Fd()
	}
	return r, w, err
}

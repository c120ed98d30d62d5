package jspool

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/autobox-dev/autobox/internal/pace"
)

// Options configure a Pool.
type Options struct {
	// Exe is the autobox binary workers run (`autobox worker js`).
	Exe string
	// Size is how many workers are kept warm; 0 or less keeps none (each call
	// starts its own).
	Size int
	// Throughput tunes workers for batch runs: a coarser timer slack and no
	// warm-up (see workerTimerSlack, proto.Init.NoWarmup).
	Throughput bool
	// Unjailed starts workers without the OS sandbox, V8's isolation alone: the
	// positive control of the jail tests, never a server's choice.
	Unjailed bool
	// Log receives the pool's warnings (nil: none).
	Log *slog.Logger
}

// New starts a pool: it chooses how workers are jailed on this host, restricts a
// thread once to prove the jail can be had, and starts warming Size workers.
func New(opts Options) (*Pool, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	wj := unjailedWorkers(opts.Exe)
	if !opts.Unjailed {
		var err error
		if wj, err = workerLaunch(opts.Exe, log); err != nil {
			return nil, err
		}
	}
	return newPool(wj, opts.Size, opts.Throughput, log)
}

// Pool keeps `size` workers warm. Each worker is forked from a thread of its own
// that restricts itself first (prepare) and exits once the worker runs: no thread of
// the server stays in a worker's Landlock domain, where the worker (should V8 fall to
// the code it runs) could signal it, and with it the whole server. A worker therefore
// cannot have a parent-death signal (it would fire when that thread exits): it
// watches the life pipe instead, whose write end only the server holds, and exits at
// its end of file, which comes when the server exits, however it exits.
type Pool struct {
	jail    *workerJail
	env     []string // of every worker (workerEnv)
	devnull *os.File // stdin/stdout of workers, opened before a spawning thread is restricted
	life    *os.File // read end of the life pipe, fd 5 of every worker
	lifeW   *os.File // its write end, held until close
	size    int
	log     *slog.Logger
	// throughput tunes workers for batch runs (Options.Throughput).
	throughput bool
	// preludeCache is the code cache of the prelude made by the first worker, passed
	// to every later one (see proto.Init). It comes from a ready frame, sent before
	// the worker has seen any code.
	preludeCache atomic.Pointer[[]byte]
	// cacheGiven counts workers started with the cache; cacheMisses those of them
	// that made their own: V8 rejected it.
	cacheGiven, cacheMisses atomic.Int64
	v8Version               atomic.Pointer[string] // as the first ready worker said
	calls                   *pace.Calls            // spaced-out calls get their replacement after the answer
	delayed                 atomic.Int32           // replacements waiting for pace.AfterCall
	ready                   chan *jsWorker
	stop                    chan struct{}
	wg                      sync.WaitGroup

	mu      sync.Mutex
	live    map[*jsWorker]bool
	pending int // spawns requested for the warm set, not yet ready
	waiting int // calls in get waiting for one of them
	starts  int // workers started, all told
	// settled is closed, and replaced, each time a pending spawn ends (ready,
	// failed or cut short by Close): a call waiting for one looks again.
	settled chan struct{}
	closed  bool
}

func newPool(jail *workerJail, size int, throughput bool, log *slog.Logger) (*Pool, error) {
	if size < 0 {
		size = 0
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	life, lifeW, err := os.Pipe()
	if err != nil {
		devnull.Close()
		return nil, err
	}
	p := &Pool{
		jail: jail, env: workerEnv(), devnull: devnull, life: life, lifeW: lifeW, size: size, throughput: throughput, log: log,
		calls:   pace.NewCalls(),
		ready:   make(chan *jsWorker, max(size, 1)),
		stop:    make(chan struct{}),
		live:    map[*jsWorker]bool{},
		settled: make(chan struct{}),
	}
	// Once now, so that a host where the restriction fails says so at start-up.
	if _, err := p.onOwnThread(func() (*jsWorker, error) { return nil, nil }); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("preparing the JS worker jail: %w", err)
	}
	p.refill()
	return p, nil
}

// refill starts workers in the background until size are warm or on their way.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.pending < p.size {
		p.pending++
		go p.warmOne()
	}
}

func (p *Pool) warmOne() {
	w, err := p.spawnReady(context.Background())
	if err == nil {
		// Into ready before pending counts it no more, so that a call waiting
		// for it finds it when it looks again (see get).
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		delivered := false
		if !closed {
			select {
			case p.ready <- w:
				delivered = true
			default:
			}
		}
		if !delivered {
			w.kill()
		}
	}
	p.mu.Lock()
	p.pending--
	close(p.settled)
	p.settled = make(chan struct{})
	closed := p.closed
	p.mu.Unlock()
	if err != nil && !closed {
		p.log.Warn("JS worker failed to start", "err", err)
		time.Sleep(200 * time.Millisecond) // do not spin on a broken host
	}
}

// get returns a warm worker. If none is ready but one is starting that no other
// call waits for, it waits for that one: it is further on than a start of the
// call's own would be, and such a start would slow those on their way (calls
// back to back, more than the pool holds, each waited for a start of its own
// beside the pool's refills). Else it starts one. The caller owns the worker
// and calls done when its call is over: starting the replacement during the
// call would take the CPU the call needs.
func (p *Pool) get(ctx context.Context) (*jsWorker, error) {
	spaced := p.calls.Spaced()
	for {
		select {
		case w := <-p.ready:
			w.spaced = spaced
			if len(p.ready) == 0 && p.delayed.Load() > 0 {
				p.refill() // the pool ran dry while a replacement waits: start it now
			}
			return w, nil
		default:
		}
		p.mu.Lock()
		if p.closed || p.waiting >= p.pending {
			p.mu.Unlock()
			break
		}
		p.waiting++
		settled := p.settled
		p.mu.Unlock()
		var w *jsWorker
		select {
		case w = <-p.ready:
		case <-settled:
		case <-p.stop:
		case <-ctx.Done():
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
		if w != nil {
			w.spaced = spaced
			return w, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
	w, err := p.spawnReady(ctx)
	if err != nil && ctx.Err() == nil {
		// Said, so that a call that waited for two starts (up to 20 s on a
		// machine too busy to start one in 10) tells why.
		p.log.Warn("a JS worker did not start; starting another", "err", err)
		w, err = p.spawnReady(ctx) // one more try: a start can fail for a passing reason
	}
	if w != nil {
		w.spaced = spaced
	}
	return w, err
}

// done ends a worker whose call is over and replaces it: when calls are spaced
// out and another worker is ready, pace.AfterCall later, once the result has gone
// out; otherwise at once (see package pace).
func (p *Pool) done(w *jsWorker) {
	go w.kill() // reaping is not the caller's business
	if w.spaced && len(p.ready) > 0 {
		p.delayed.Add(1)
		time.AfterFunc(pace.AfterCall, func() {
			p.delayed.Add(-1)
			p.refill()
		})
		return
	}
	p.refill()
}

// Close kills every worker and stops the spawner. Calls in flight fail.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ws := make([]*jsWorker, 0, len(p.live))
	for w := range p.live {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	close(p.stop)
	for _, w := range ws {
		w.kill()
	}
	p.wg.Wait()
	p.closeFiles()
}

func (p *Pool) closeFiles() {
	p.devnull.Close()
	p.life.Close()
	p.lifeW.Close()
}

// Isolation is what the workers run in: jail.ModeRoot, jail.ModeUserNS or
// jail.ModeLandlock, "seatbelt" on macOS, "unjailed".
func (p *Pool) Isolation() string { return p.jail.isolation }

// Weaker says, where the workers' jail is weaker than the best this platform
// has, why and what would make it whole; "" otherwise.
func (p *Pool) Weaker() string { return p.jail.why }

// V8Version is the version of V8 the workers link, as the first worker to be
// ready said it ("" before one was).
func (p *Pool) V8Version() string {
	if v := p.v8Version.Load(); v != nil {
		return *v
	}
	return ""
}

package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/internal/goenv"
	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/worker/proto"
)

// maxWorkerStderr bounds what the supervisor keeps of a worker's stderr: enough to
// recognise V8's fatal heap message.
const maxWorkerStderr = 16 << 10

// workerEnv is the whole environment of a JS worker: nothing of the server's but its
// time zone (see hostTimeZone), and Go runtime settings for a process that lives for
// one call (see goenv.Child). The memory limit leaves room for bridge replies, which
// can be large.
func workerEnv() []string {
	return append(goenv.Child("48MiB"), "TZ="+hostTimeZone())
}

// workerTimerSlack is the timer slack of batch workers (pool.throughput), set before
// the Go runtime starts (worker/link_linux.go). A worker lives for ~10 ms, and the
// Go runtime's monitor thread polls every 20 µs (plus the kernel's default 50 µs of
// slack) for the first milliseconds of a process: ~90 wake-ups per worker, half the
// context switches of a batch run. With 2 ms of slack a batch run switched 40% less
// and was ~12% faster. Sleeps get up to 2 ms longer, JS timers included; blocking
// reads, which is how a worker waits for its call, are not affected.
const workerTimerSlack = "AUTOBOX_TIMER_SLACK_NS=2000000"

// jsWorker is one prefork `autobox worker js` process, ready for exactly one call.
type jsWorker struct {
	proc   *os.Process
	state  *os.ProcessState // once exited is closed (nil if waiting failed)
	toW    *os.File         // frames to the worker
	fromW  *os.File         // frames from the worker: a blocking pipe, read by the worker's owner
	exited chan struct{}    // closed once the process has been reaped and its stderr read
	stderr *boundedBuffer

	gotCache bool // started with the prelude code cache
	spaced   bool // its call was spaced out from the one before (see done)
}

// read receives the worker's next frame. The pipe is in blocking mode, outside Go's
// poller, so the caller's thread sleeps in read(2) and the worker's frame wakes it
// directly, instead of waking the poller, which then wakes the caller: each thread
// wake-up costs 50-200µs on a small VM. Reading in the caller's goroutine, rather
// than handing frames over from another, saves one more. A read is ended by ending
// the worker: see watch.
func (w *jsWorker) read() (*proto.Message, error) {
	return proto.Read(w.fromW)
}

// watch kills the worker at deadline or when ctx ends, which ends a pending read
// with EOF; expired tells whether the deadline did it. stop disarms both.
func (w *jsWorker) watch(ctx context.Context, deadline time.Time) (expired func() bool, stop func()) {
	var hit atomic.Bool
	t := time.AfterFunc(time.Until(deadline), func() {
		hit.Store(true)
		_ = w.proc.Kill()
	})
	stopCtx := context.AfterFunc(ctx, func() { _ = w.proc.Kill() })
	return hit.Load, func() {
		t.Stop()
		stopCtx()
	}
}

// kill ends the worker (idempotent) and waits for it to be reaped.
func (w *jsWorker) kill() {
	_ = w.proc.Kill()
	w.toW.Close()
	<-w.exited
	w.fromW.Close()
}

// pool keeps `size` workers warm. Each worker is forked from a thread of its own
// that restricts itself first (prepare) and exits once the worker runs: no thread of
// the server stays in a worker's Landlock domain, where the worker (should V8 fall to
// the code it runs) could signal it, and with it the whole server. A worker therefore
// cannot have a parent-death signal (it would fire when that thread exits): it
// watches the life pipe instead, whose write end only the server holds, and exits at
// its end of file, which comes when the server exits, however it exits.
type pool struct {
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
	closed  bool
}

type spawnResult struct {
	w   *jsWorker
	err error
}

// workerJail is how the pool starts JS workers on this platform (workerLaunch).
type workerJail struct {
	argv    []string     // command line of a worker (exe first)
	prepare func() error // run on each worker's own thread before it starts one (nil: nothing)
	// start starts a worker with files as its descriptors 0..n-1, from the thread
	// prepare ran on; nil: os.StartProcess with workerSysProcAttr.
	start func(argv, env []string, files []*os.File) (*os.Process, error)
	// isolation is what execute_js results say the code ran in: jail.ModeRoot,
	// jail.ModeUserNS or jail.ModeLandlock, "seatbelt" on macOS, "unjailed".
	isolation string
	// why says, where the jail is weaker than the host's best, why and what would
	// make it whole ("" otherwise).
	why string
	// refusals reads the system calls a worker's filter refused from its stderr
	// (nil: none can be).
	refusals func(stderr []byte) []string
}

// unjailedWorkers are workers without an OS sandbox, V8's isolation alone.
func unjailedWorkers(exe string) *workerJail {
	return &workerJail{argv: []string{exe, "worker", "js", "--unjailed"}, isolation: isolationUnjailed, why: "no OS sandbox for JS workers on this host"}
}

// isolationUnjailed is the isolation of a JS worker without an OS sandbox.
const isolationUnjailed = "unjailed"

func newPool(jail *workerJail, size int, throughput bool, log *slog.Logger) (*pool, error) {
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
	p := &pool{
		jail: jail, env: workerEnv(), devnull: devnull, life: life, lifeW: lifeW, size: size, throughput: throughput, log: log,
		calls: pace.NewCalls(),
		ready: make(chan *jsWorker, max(size, 1)),
		stop:  make(chan struct{}),
		live:  map[*jsWorker]bool{},
	}
	// Once now, so that a host where the restriction fails says so at start-up.
	if _, err := p.onOwnThread(func() (*jsWorker, error) { return nil, nil }); err != nil {
		p.closeFiles()
		return nil, fmt.Errorf("preparing the JS worker jail: %w", err)
	}
	p.refill()
	return p, nil
}

// onOwnThread runs prepare and then f on a thread of their own, which is retired
// when they return (the goroutine exits locked).
func (p *pool) onOwnThread(f func() (*jsWorker, error)) (*jsWorker, error) {
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

func (p *pool) spawn() (*jsWorker, error) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.wg.Add(1)
	}
	p.mu.Unlock()
	if closed {
		return nil, errors.New("server is shutting down")
	}
	defer p.wg.Done()
	return p.onOwnThread(p.start)
}

func (p *pool) start() (*jsWorker, error) {
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
		p.mu.Lock()
		delete(p.live, w)
		p.mu.Unlock()
		p.reportRefusals(w)
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
func (p *pool) reportRefusals(w *jsWorker) {
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

// refill starts workers in the background until size are warm or on their way.
func (p *pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.pending < p.size {
		p.pending++
		go p.warmOne()
	}
}

func (p *pool) warmOne() {
	w, err := p.spawnReady(context.Background())
	p.mu.Lock()
	p.pending--
	closed := p.closed
	p.mu.Unlock()
	if err != nil {
		if !closed {
			p.log.Warn("JS worker failed to start", "err", err)
			time.Sleep(200 * time.Millisecond) // do not spin on a broken host
		}
		return
	}
	if closed {
		w.kill()
		return
	}
	select {
	case p.ready <- w:
	default:
		w.kill()
	}
}

// spawnReady starts a worker and waits for its "ready" frame.
func (p *pool) spawnReady(ctx context.Context) (*jsWorker, error) {
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

// get returns a warm worker, or starts one if none is ready. The caller owns it and
// calls done when its call is over: starting the replacement during the call would
// take the CPU the call needs.
func (p *pool) get(ctx context.Context) (*jsWorker, error) {
	spaced := p.calls.Spaced()
	select {
	case w := <-p.ready:
		w.spaced = spaced
		if len(p.ready) == 0 && p.delayed.Load() > 0 {
			p.refill() // the pool ran dry while a replacement waits: start it now
		}
		return w, nil
	default:
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
func (p *pool) done(w *jsWorker) {
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

// close kills every worker and stops the spawner.
func (p *pool) close() {
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

func (p *pool) closeFiles() {
	p.devnull.Close()
	p.life.Close()
	p.lifeW.Close()
}

// describeExit says why a worker stopped talking.
func (w *jsWorker) describeExit(readErr error) string {
	select {
	case <-w.exited:
	case <-time.After(2 * time.Second):
		_ = w.proc.Kill()
		<-w.exited
	}
	msg := "exited"
	if w.state == nil {
		msg = "lost (could not be waited for)"
	} else if ws, ok := w.state.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			msg = "killed by signal " + ws.Signal().String()
		case ws.Exited():
			msg = fmt.Sprintf("exited with status %d", ws.ExitStatus())
		}
	}
	if s := bytes.TrimSpace(w.stderr.Bytes()); len(s) > 0 {
		if len(s) > 400 {
			s = s[len(s)-400:]
		}
		msg += ": " + string(s)
	}
	if readErr != nil && !errors.Is(readErr, io.EOF) && !errors.Is(readErr, io.ErrUnexpectedEOF) {
		msg += " (" + readErr.Error() + ")"
	}
	return msg
}

// blockingPipe is os.Pipe with a read end in blocking mode (see jsWorker.read): Fd
// puts it there, and reads then wait in read(2) rather than in Go's poller.
func blockingPipe() (r, w *os.File, err error) {
	if r, w, err = os.Pipe(); err == nil {
		r.Fd()
	}
	return r, w, err
}

// boundedBuffer keeps the first max bytes written and the last max/4 of the
// rest: a worker's stderr ends with what killed it (V8's out-of-memory report
// comes last, after whatever the call printed before).
type boundedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	tail    []byte // the last max/4 bytes past the first max
	dropped int64  // bytes neither in buf nor in tail
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := b.max - b.buf.Len(); room > 0 {
		k := min(room, len(p))
		b.buf.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		keep := b.max / 4
		b.tail = append(b.tail, p...)
		if over := len(b.tail) - keep; over > 0 {
			b.dropped += int64(over)
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return n, nil
}

func (b *boundedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]byte(nil), b.buf.Bytes()...)
	if b.dropped > 0 {
		out = fmt.Appendf(out, "\n[... %d bytes left out ...]\n", b.dropped)
	}
	return append(out, b.tail...)
}

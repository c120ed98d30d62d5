package jspool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/autobox-dev/autobox/internal/watchdog"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/worker/proto"
)

// killGrace is how long past its time limit a worker may take to answer before the
// supervisor kills it.
const killGrace = 500 * time.Millisecond

// Request is one validated execute_js call.
type Request struct {
	// Run is the code and its limits, as the worker gets them.
	Run proto.Run
	// Mounts are what host.readFile, writeFile and listDir reach, resolved and
	// checked by the caller.
	Mounts []policy.Mount
	// MaxRead and MaxWrite bound the bytes the file bridge reads and writes.
	MaxRead, MaxWrite int64
	// Deadline is when the bridge stops answering: the call's start plus its
	// time limit.
	Deadline time.Time
	// Dial, with Run.AllowNetwork, makes fetch's connections (a proxy that checks
	// and records each); nil: the open network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log receives each console line as the worker sends it (with Run.Progress);
	// nil: none are wanted.
	Log func(line string)
}

// The limits of its own a call may end at (errors.Is on Result.Err), for
// callers that branch on them: never on Err's text, which a script's own
// thrown error can imitate.
var (
	ErrTimeout     = errors.New("the call's time limit (timeoutMs)")
	ErrMemoryLimit = errors.New("the call's memory limit (memoryMb)")
)

// limitError is a call ended at one of its limits: its text, as execute_js
// reports it, and which limit (errors.Is).
type limitError struct {
	limit error
	text  string
}

func (e *limitError) Error() string        { return e.text }
func (e *limitError) Is(target error) bool { return target == e.limit }

func limitErr(limit error, format string, a ...any) error {
	return &limitError{limit: limit, text: fmt.Sprintf(format, a...)}
}

// killedBy reports whether the process ended by signal sig.
func killedBy(ps *os.ProcessState, sig syscall.Signal) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// Result is how one call ended.
type Result struct {
	// Worker is the worker's answer: the code's value or what it threw, and its
	// console output. Nil when Err is set.
	Worker *proto.Result
	// Err is why the call ended without the worker's answer: the time limit, the
	// memory limit, a crash of the worker, the call cancelled. Its text is what
	// execute_js reports.
	Err error
	// ReadBytes and WriteBytes are the bytes the file bridge read and wrote.
	ReadBytes, WriteBytes int64
}

// Run runs req in a worker of the pool and answers the worker's bridge requests
// until its result. Its error is only that no worker could be had; everything
// that happened to the call is in the Result. Safe for concurrent use.
func (p *Pool) Run(ctx context.Context, req *Request) (*Result, error) {
	w, err := p.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("no JS worker: %w", err)
	}
	defer p.done(w)
	b := newBridge(req.Mounts, req.MaxRead, req.MaxWrite, req.Run.AllowNetwork, req.Deadline)
	defer b.close()
	if req.Dial != nil {
		// Every connection, the first and each redirect's, is made by Dial.
		b.fetchClient = newFetchClient(req.Dial)
	}
	res, err := converse(ctx, w, req, b)
	return &Result{Worker: res, Err: err, ReadBytes: b.readBytes, WriteBytes: b.writeBytes}, nil
}

// converse sends the call to the worker and answers its bridge requests until the
// result arrives, the worker dies, the time limit plus grace passes, or ctx ends.
func converse(ctx context.Context, w *jsWorker, req *Request, b *bridge) (*proto.Result, error) {
	if err := proto.Write(w.toW, &proto.Message{Type: proto.TypeRun, Run: &req.Run}); err != nil {
		if ctx.Err() != nil {
			// The call ended first (a client gone closes the server, whose
			// workers die with it): say why the call ended, not how the worker did.
			return nil, fmt.Errorf("Error: call cancelled: %w", context.Cause(ctx))
		}
		return nil, fmt.Errorf("Error: JS worker unreachable: %s", w.describeExit(err))
	}
	hard := time.Now().Add(time.Duration(req.Run.TimeoutMs)*time.Millisecond + killGrace)
	expired, stop := w.watch(ctx, hard)
	defer stop()
	// memoryMb bounds V8's heap; ArrayBuffers and WebAssembly memories live outside
	// it, so the worker's whole resident memory is watched too.
	var breach atomic.Int64
	rss := watchdog.Start(w.proc.Pid, watchdog.Limits{Memory: workerRSSLimit(req.Run.MemoryMb), Written: -1}, watchdog.Options{MemoryOnly: true}, func(b watchdog.Breach) {
		breach.Store(b.Value)
		_ = w.proc.Kill()
	})
	defer rss.Stop()
	fetches := newCallFetches(ctx, w, b)
	defer fetches.end()
	for {
		m, err := w.read()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, fmt.Errorf("Error: call cancelled: %w", context.Cause(ctx))
		case breach.Load() != 0:
			return nil, limitErr(ErrMemoryLimit, "MemoryLimitError: the worker used %d MB, more than memoryMb (%d MB) allows for heap plus buffers; the isolate was terminated (RSS watchdog)", breach.Load()>>20, req.Run.MemoryMb)
		case expired():
			return nil, limitErr(ErrTimeout, "TimeoutError: execution exceeded %dms", req.Run.TimeoutMs)
		default:
			return nil, w.crashError(&req.Run, err)
		}
		switch m.Type {
		case proto.TypeResult:
			if m.Result == nil {
				return nil, errors.New("Error: JS worker sent an empty result")
			}
			return m.Result, nil
		case proto.TypeLog:
			if req.Log != nil {
				req.Log(m.Log)
			}
		case proto.TypeBridge:
			if m.Bridge != nil && m.Bridge.Op == "fetch" {
				err = fetches.start(m.Bridge)
			} else {
				err = fetches.write(&proto.Message{Type: proto.TypeReply, Reply: b.handle(ctx, m.Bridge)})
			}
			if err != nil {
				return nil, w.crashError(&req.Run, err)
			}
		default:
			return nil, fmt.Errorf("Error: JS worker sent an unexpected %q frame", m.Type)
		}
	}
}

// workerRSSLimit is the resident memory a worker may reach: its own runtime and V8
// (about 40 MB), the heap, and as much again for ArrayBuffers and WebAssembly.
func workerRSSLimit(memoryMb int) int64 {
	return int64(64+2*memoryMb) << 20
}

// crashError explains a worker that died mid-call: V8's fatal heap exhaustion becomes
// the memory-limit error; anything else is a crash of this call only.
func (w *jsWorker) crashError(run *proto.Run, readErr error) error {
	desc := w.describeExit(readErr)
	if isHeapExhaustion(w.stderr.Bytes()) {
		return limitErr(ErrMemoryLimit, "MemoryLimitError: the isolate's heap exceeded memoryMb (%d MB); the isolate was terminated", run.MemoryMb)
	}
	// The worker's CPU time is capped at its call's time limit (RLIMIT_CPU, whole
	// seconds): the kernel's SIGKILL at the cap is the time limit too.
	if ps := w.state; ps != nil && killedBy(ps, syscall.SIGKILL) && ps.UserTime()+ps.SystemTime() >= time.Duration(run.TimeoutMs)*time.Millisecond {
		return limitErr(ErrTimeout, "TimeoutError: execution exceeded %dms (of CPU time: the worker's cap)", run.TimeoutMs)
	}
	return fmt.Errorf("Error: the JS worker crashed (%s)", desc)
}

func isHeapExhaustion(stderr []byte) bool {
	for _, m := range [][]byte{[]byte("Fatal javascript OOM"), []byte("JavaScript heap out of memory"), []byte("Reached heap limit"), []byte("Fatal JavaScript invalid size error"), []byte("Fatal process out of memory")} {
		if bytes.Contains(stderr, m) {
			return true
		}
	}
	return false
}

// Probe takes a warm worker and asks it to open each path instead of running
// code: on a jailed worker every attempt fails. It returns one line per attempt.
func (p *Pool) Probe(ctx context.Context, paths []string) ([]string, error) {
	w, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	defer p.done(w)
	if err := proto.Write(w.toW, &proto.Message{Type: proto.TypeProbe, Probe: paths}); err != nil {
		return nil, err
	}
	_, stop := w.watch(ctx, time.Now().Add(10*time.Second))
	defer stop()
	m, err := w.read()
	if err != nil || m.Result == nil {
		return nil, fmt.Errorf("JS worker: %s", w.describeExit(err))
	}
	return m.Result.Logs, nil
}

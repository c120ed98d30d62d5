package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/store"
	"github.com/autobox-dev/autobox/worker/proto"
)

// MaxCodeBytes bounds the `code` argument of execute_js.
const MaxCodeBytes = 1 << 20

// killGrace is how long past its time limit a worker may take to answer before the
// supervisor kills it.
const killGrace = 500 * time.Millisecond

// JSInput is the execute_js argument object. The tags are the descriptions in the
// tool's input schema, which toolSchemas completes with defaults and bounds.
type JSInput struct {
	Code          string             `json:"code" jsonschema:"JavaScript to run: a bare expression (2+2, trailing ; ok), statements whose last expression is the value, or statements with return; await is allowed; at most 1 MB"`
	TimeoutMs     *int               `json:"timeoutMs,omitempty" jsonschema:"wall-clock limit in ms"`
	MemoryMb      *int               `json:"memoryMb,omitempty" jsonschema:"isolate heap limit in MB"`
	AllowNetwork  bool               `json:"allowNetwork,omitempty" jsonschema:"expose host-mediated fetch/net.fetch/net.fetchJson for http(s), to any host"`
	AllowHosts    []string           `json:"allowHosts,omitempty" jsonschema:"expose fetch for these hosts only, checked as exec_command's allowHosts (every redirect too): example.com, *.example.com, example.com:8443, localhost:5432, 10.1.2.0/24:5432; not with allowNetwork"`
	Mounts        []policy.MountSpec `json:"mounts,omitempty" jsonschema:"host directories {hostPath, sandboxPath, mode} or workspaces {workspaceId} for host.readFile/writeFile/listDir"`
	MaxReadBytes  *int64             `json:"maxReadBytes,omitempty" jsonschema:"per-call cap on bytes read through the file bridge"`
	MaxWriteBytes *int64             `json:"maxWriteBytes,omitempty" jsonschema:"per-call cap on bytes written through the file bridge"`
}

// JSOutput is the execute_js result.
type JSOutput struct {
	OK         bool          `json:"ok" jsonschema:"the code ran to the end without throwing"`
	Result     any           `json:"result" jsonschema:"the value of the code as JSON (undefined becomes null); null when ok is false"`
	Error      *string       `json:"error" jsonschema:"why ok is false: the thrown error, TimeoutError, MemoryLimitError, a bridge refusal or invalid arguments; null when ok"`
	Logs       []string      `json:"logs" jsonschema:"console output, one string per call"`
	DurationMs float64       `json:"durationMs" jsonschema:"wall-clock time of the call in ms"`
	ReadBytes  int64         `json:"readBytes" jsonschema:"bytes read through host.readFile"`
	WriteBytes int64         `json:"writeBytes" jsonschema:"bytes written through host.writeFile"`
	Network    *proxy.Record `json:"network,omitempty" jsonschema:"with allowHosts: the hosts fetched from and the connections refused, with why"`
	Mounts     []MountReport `json:"mounts,omitempty" jsonschema:"the mounts the code ran with, each with the host directory it resolved to"`
	Isolation  string        `json:"isolation,omitempty" jsonschema:"the jail the JS worker ran in: namespaces (a root server: a user and pid namespace of its own), user-namespaces (an ordinary user's server: the same), landlock-only (no namespaces on this host: Landlock and the seccomp allow-list alone), seatbelt (macOS), unjailed (no OS sandbox on this host: V8's isolation alone)"`
}

// jsCall is a validated execute_js call.
type jsCall struct {
	run      proto.Run
	net      netChoice
	mounts   []policy.Mount
	maxRead  int64
	maxWrite int64
}

func (s *Server) validateJS(in *JSInput) (*jsCall, error) {
	c := &jsCall{}
	var err error
	if in.Code == "" {
		return nil, fmt.Errorf("%w: code is required", policy.ErrInvalid)
	}
	if len(in.Code) > MaxCodeBytes {
		return nil, fmt.Errorf("%w: code is %d bytes, at most %d allowed", policy.ErrInvalid, len(in.Code), MaxCodeBytes)
	}
	c.run.Code = in.Code
	if c.run.TimeoutMs, err = bounded(jsTimeoutMs, in.TimeoutMs); err != nil {
		return nil, err
	}
	if c.run.MemoryMb, err = bounded(jsMemoryMb, in.MemoryMb); err != nil {
		return nil, err
	}
	if c.maxRead, err = bounded(maxReadBytes, in.MaxReadBytes); err != nil {
		return nil, err
	}
	if c.maxWrite, err = bounded(maxWriteBytes, in.MaxWriteBytes); err != nil {
		return nil, err
	}
	if c.net, err = s.networkChoice(in.AllowNetwork, in.AllowHosts, false); err != nil {
		return nil, err
	}
	c.run.AllowNetwork = c.net.open || c.net.proxied()
	if c.mounts, err = s.resolveMounts(in.Mounts); err != nil {
		return nil, err
	}
	if err := refusePseudoMounts(c.mounts); err != nil {
		return nil, err
	}
	return c, nil
}

// ExecuteJS runs one execute_js call. It is the one code path behind the MCP tool,
// the command line and batch runs. Safe for concurrent use.
func (s *Server) ExecuteJS(ctx context.Context, in *JSInput) (*JSOutput, error) {
	start := time.Now()
	c, err := s.validateJS(in)
	if err != nil {
		return nil, err
	}
	if err := s.admitJS(ctx, in, c); err != nil {
		return nil, err
	}
	start = time.Now() // the user's time to answer is not the call's
	leave, err := s.enter(ctx, c.mounts, store.User{Who: "an execute_js call"})
	if err != nil {
		return nil, err
	}
	defer leave()
	w, err := s.pool.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("no JS worker: %w", err)
	}
	defer s.pool.done(w)
	b := newBridge(c.mounts, c.maxRead, c.maxWrite, c.run.AllowNetwork, start.Add(time.Duration(c.run.TimeoutMs)*time.Millisecond))
	defer b.close()
	out := &JSOutput{Logs: []string{}, Mounts: reportMounts(c.mounts), Isolation: s.pool.jail.isolation}
	if c.net.proxied() {
		pc, err := s.proxyFor(ctx, c.net, s.reachAsker(ctx, "this JavaScript call (execute_js)", nil))
		if err != nil {
			return nil, err
		}
		// Every connection, the first and each redirect's, is checked and
		// recorded by the call's registration (a command's matcher and rules).
		b.fetchClient = newFetchClient(pc.DialContext)
		defer func() {
			rec := pc.Close()
			out.Network = &rec
		}()
	}
	var tail *outputTail // the latest console line, for reports of progress
	if progressOf(ctx) != nil {
		tail, c.run.Progress = &outputTail{}, true
	}
	stopProgress := reportProgress(ctx, start, time.Duration(c.run.TimeoutMs)*time.Millisecond, tail.line)
	res, err := s.converse(ctx, w, c, b, tail)
	stopProgress()
	out.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	out.ReadBytes, out.WriteBytes = b.readBytes, b.writeBytes
	if err != nil {
		msg := err.Error()
		msg += jsNote(msg, s.jsTimeoutCap())
		out.Error = &msg
		return out, nil
	}
	out.OK = res.OK && res.Error == ""
	if out.OK {
		out.Result = res.Result
	}
	if res.Error != "" {
		msg := res.Error + networkHint(res.Error, c.run.AllowNetwork) + jsNote(res.Error, s.jsTimeoutCap())
		out.Error = &msg
	}
	if res.Logs != nil {
		out.Logs = res.Logs
	}
	return out, nil
}

// converse sends the call to the worker and answers its bridge requests until the
// result arrives, the worker dies, the time limit plus grace passes, or ctx ends.
func (s *Server) converse(ctx context.Context, w *jsWorker, c *jsCall, b *bridge, tail *outputTail) (*proto.Result, error) {
	if err := proto.Write(w.toW, &proto.Message{Type: proto.TypeRun, Run: &c.run}); err != nil {
		return nil, fmt.Errorf("Error: JS worker unreachable: %s", w.describeExit(err))
	}
	hard := time.Now().Add(time.Duration(c.run.TimeoutMs)*time.Millisecond + killGrace)
	expired, stop := w.watch(ctx, hard)
	defer stop()
	// memoryMb bounds V8's heap; ArrayBuffers and WebAssembly memories live outside
	// it, so the worker's whole resident memory is watched too.
	var breach atomic.Int64
	stopWatch := watchRSS(w.proc.Pid, workerRSSLimit(c.run.MemoryMb), func(rss int64) {
		breach.Store(rss)
		_ = w.proc.Kill()
	})
	defer stopWatch()
	fetches := newCallFetches(ctx, w, b)
	defer fetches.end()
	for {
		m, err := w.read()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, fmt.Errorf("Error: call cancelled: %w", context.Cause(ctx))
		case breach.Load() != 0:
			return nil, fmt.Errorf("MemoryLimitError: the worker used %d MB, more than memoryMb (%d MB) allows for heap plus buffers; the isolate was terminated (RSS watchdog)", breach.Load()>>20, c.run.MemoryMb)
		case expired():
			return nil, fmt.Errorf("TimeoutError: execution exceeded %dms", c.run.TimeoutMs)
		default:
			return nil, w.crashError(c, err)
		}
		switch m.Type {
		case proto.TypeResult:
			if m.Result == nil {
				return nil, errors.New("Error: JS worker sent an empty result")
			}
			return m.Result, nil
		case proto.TypeLog:
			tail.add([]byte("\n" + m.Log))
		case proto.TypeBridge:
			if m.Bridge != nil && m.Bridge.Op == "fetch" {
				err = fetches.start(m.Bridge)
			} else {
				err = fetches.write(&proto.Message{Type: proto.TypeReply, Reply: b.handle(ctx, m.Bridge)})
			}
			if err != nil {
				return nil, w.crashError(c, err)
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
func (w *jsWorker) crashError(c *jsCall, readErr error) error {
	desc := w.describeExit(readErr)
	if isHeapExhaustion(w.stderr.Bytes()) {
		return fmt.Errorf("MemoryLimitError: the isolate's heap exceeded memoryMb (%d MB); the isolate was terminated", c.run.MemoryMb)
	}
	// The worker's CPU time is capped at its call's time limit (RLIMIT_CPU, whole
	// seconds): the kernel's SIGKILL at the cap is the time limit too.
	if ps := w.state; ps != nil && strings.Contains(desc, "killed by signal killed") && ps.UserTime()+ps.SystemTime() >= time.Duration(c.run.TimeoutMs)*time.Millisecond {
		return fmt.Errorf("TimeoutError: execution exceeded %dms (of CPU time: the worker's cap)", c.run.TimeoutMs)
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

// jsTool adapts ExecuteJS to the MCP tool handler shape: failures of the code are
// tool errors (isError) that still carry the result object.
func (s *Server) jsTool(ctx context.Context, in *JSInput) (*JSOutput, bool, error) {
	out, err := s.ExecuteJS(ctx, in)
	if err != nil {
		return nil, false, err
	}
	return out, !out.OK, nil
}

// jsFailed is the result of an execute_js call that was refused (invalid arguments,
// no worker): the same object as a failed run, with ok false and the reason in error.
func jsFailed(err error) *JSOutput {
	msg := err.Error()
	return &JSOutput{Result: nil, Error: &msg, Logs: []string{}}
}

// ProbeWorkerJail takes a warm JS worker and asks it to open each path instead of
// running code: on a jailed worker every attempt fails. It returns one line per
// attempt and the worker's pid.
func (s *Server) ProbeWorkerJail(ctx context.Context, paths []string) ([]string, error) {
	w, err := s.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	defer s.pool.done(w)
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

// networkHint is what a script that reached for the network without it is
// told to do: fetch and net exist only with allowHosts or allowNetwork, and
// "fetch is not defined" alone does not say so.
func networkHint(msg string, network bool) string {
	if network {
		return ""
	}
	for _, name := range []string{"fetch", "net"} {
		if strings.Contains(msg, name+" is not defined") {
			return fmt.Sprintf(" (%s exists only with network: pass allowHosts, e.g. [\"api.example.com\"], to fetch from those hosts, or allowNetwork: true for any host; this call has no network)", name)
		}
	}
	return ""
}

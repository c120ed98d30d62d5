package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/jspool"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/proxy"
	"github.com/autobox-dev/autobox/store"
	"github.com/autobox-dev/autobox/worker/proto"
)

// MaxCodeBytes bounds the `code` argument of execute_js.
const MaxCodeBytes = 1 << 20

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
	// EndedAt is the limit of its own the call ended at, "" for none: for
	// callers that branch on it (the CLI's exit status), never on Error's
	// text, which a script's own thrown error can imitate. Not in the MCP
	// result, which says it in error ("TimeoutError: ...").
	EndedAt JSLimit `json:"-"`
}

// JSLimit is a limit of its own an execute_js call ended at.
type JSLimit string

// The limits an execute_js call may end at.
const (
	JSTimeout JSLimit = "timeout" // timeoutMs
	JSMemory  JSLimit = "memory"  // memoryMb
)

// jsLimitOf is the limit a call that ended without the worker's answer ended
// at (jspool's Result.Err), "" for none.
func jsLimitOf(err error) JSLimit {
	switch {
	case errors.Is(err, jspool.ErrTimeout):
		return JSTimeout
	case errors.Is(err, jspool.ErrMemoryLimit):
		return JSMemory
	}
	return ""
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
	if err := jspool.RefusePseudoMounts(c.mounts); err != nil {
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
	pool, err := s.js.get()
	if err != nil {
		return nil, err
	}
	out := &JSOutput{Logs: []string{}, Mounts: reportMounts(c.mounts), Isolation: pool.Isolation()}
	req := &jspool.Request{Run: c.run, Mounts: c.mounts, MaxRead: c.maxRead, MaxWrite: c.maxWrite, Deadline: start.Add(time.Duration(c.run.TimeoutMs) * time.Millisecond)}
	if c.net.proxied() {
		pc, err := s.proxyFor(ctx, c.net, s.reachAsker(ctx, "this JavaScript call (execute_js)", nil))
		if err != nil {
			return nil, err
		}
		// Every connection, the first and each redirect's, is checked and
		// recorded by the call's registration (a command's matcher and rules).
		req.Dial = pc.DialContext
		defer func() {
			rec := pc.Close()
			out.Network = &rec
		}()
	}
	var tail *outputTail // the latest console line, for reports of progress
	if progressOf(ctx) != nil {
		tail, req.Run.Progress = &outputTail{}, true
		req.Log = func(line string) { tail.add([]byte("\n" + line)) }
	}
	stopProgress := reportProgress(ctx, start, time.Duration(c.run.TimeoutMs)*time.Millisecond, tail.line)
	ran, err := pool.Run(ctx, req)
	stopProgress()
	if err != nil {
		return nil, err
	}
	res, err := ran.Worker, ran.Err
	out.DurationMs = float64(time.Since(start).Microseconds()) / 1000
	out.ReadBytes, out.WriteBytes = ran.ReadBytes, ran.WriteBytes
	if err != nil {
		out.EndedAt = jsLimitOf(err)
		msg := err.Error()
		msg += jsNote(msg, out.EndedAt, s.jsTimeoutCap())
		out.Error = &msg
		return out, nil
	}
	out.OK = res.OK && res.Error == ""
	if out.OK {
		out.Result = res.Result
	}
	if res.Timeout {
		out.EndedAt = JSTimeout
	}
	if res.Error != "" {
		msg := res.Error + networkHint(res.Error, c.run.AllowNetwork) + jsNote(res.Error, out.EndedAt, s.jsTimeoutCap())
		out.Error = &msg
	}
	if res.Logs != nil {
		out.Logs = res.Logs
	}
	return out, nil
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
	pool, err := s.js.get()
	if err != nil {
		return nil, err
	}
	return pool.Probe(ctx, paths)
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

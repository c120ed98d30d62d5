package supervisor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/autobox-dev/autobox/ceiling"
	"github.com/autobox-dev/autobox/policy"
)

// The user's ceiling (package ceiling) held against each call, after the call's
// own validation and before anything of it runs: its host paths (canonical by
// then), network and limits. A call within it runs as it asked; a limit the call
// left to its default is lowered to the ceiling; a call beyond it is refused, or
// the user is asked (ask.go) where the client can ask them. Either way a call
// never runs with more than the ceiling and what the user granted.

// Ceiling is the ceiling this server holds calls to now.
func (s *Server) Ceiling() *ceiling.Ceiling { return s.ceiling.Current() }

// admit holds req against the ceiling and this server's grants: nil when the
// call may run. what describes the call for a question to the user.
func (s *Server) admit(ctx context.Context, what string, req ceiling.Request) error {
	es := s.Ceiling().Check(req, &s.grants)
	if len(es) == 0 {
		return nil
	}
	for _, e := range es {
		if !e.Askable {
			return refusal(es, "")
		}
	}
	return s.ask(ctx, what, es, func() []ceiling.Excess { return s.Ceiling().Check(req, &s.grants) })
}

// refusal is the error of a call beyond the ceiling: every rule it passes, and
// where the user changes each; note says why the user was not asked, or what
// they answered.
func refusal(es []ceiling.Excess, note string) error {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	msg := strings.Join(msgs, "; ")
	if note != "" {
		msg += " (" + note + ")"
	}
	return fmt.Errorf("%w: %s", ceiling.ErrBeyond, msg)
}

// mountAsks are the host paths of a call's mounts as the ceiling sees them; a
// workspace's source counts as read, for it is what the workspace holds.
func mountAsks(specs []policy.MountSpec, mounts []policy.Mount) []ceiling.MountAsk {
	var out []ceiling.MountAsk
	for _, m := range mounts {
		param := "mounts"
		for i, sp := range specs {
			if (m.WorkspaceID != "" && sp.WorkspaceID == m.WorkspaceID) || (m.WorkspaceID == "" && sp.SandboxPath != "" && filepath.Clean(sp.SandboxPath) == m.Sandbox) {
				param = fmt.Sprintf("mounts[%d]", i)
				break
			}
		}
		switch {
		case m.WorkspaceID != "":
			if m.Source != "" {
				out = append(out, ceiling.MountAsk{Param: param + ".workspaceId (its source)", Path: m.Source, Mode: ceiling.ReadOnly})
			}
		case m.Writable:
			out = append(out, ceiling.MountAsk{Param: param + ".hostPath", Path: m.Host, Mode: ceiling.ReadWrite})
		default:
			out = append(out, ceiling.MountAsk{Param: param + ".hostPath", Path: m.Host, Mode: ceiling.ReadOnly})
		}
	}
	return out
}

// lower returns v, or the ceiling's limit where the call left v to its default
// and the default is above the ceiling.
func (s *Server) lower(name string, given bool, v int) int {
	if max := s.Ceiling().Limit(name, &s.grants); !given && max > 0 && v > max {
		return max
	}
	return v
}

// admitExec holds a validated exec_command call to the ceiling.
func (s *Server) admitExec(ctx context.Context, in *ExecInput, c *execCall) error {
	c.timeoutMs = s.lower("timeoutMs", in.TimeoutMs != nil, c.timeoutMs)
	c.timeout = time.Duration(c.timeoutMs) * time.Millisecond
	c.caps = s.timeoutCaps()
	c.limitCaps = s.limitCaps()
	c.memoryMb = s.lower("memoryMb", in.MemoryMb != nil, c.memoryMb)
	c.limits.memoryMb = c.memoryMb
	c.limits.Processes = s.lower("maxProcesses", in.MaxProcesses != nil, c.limits.Processes)
	writeMb := int(c.limits.WriteBytes >> 20)
	if lowered := s.lower("maxWriteMb", in.MaxWriteMb != nil, writeMb); lowered != writeMb {
		writeMb, c.limits.WriteBytes = lowered, int64(lowered)<<20
	}
	req := ceiling.Request{
		Mounts: mountAsks(in.Mounts, c.mounts), AllowNetwork: in.AllowNetwork, AllowHosts: in.AllowHosts,
		Limits: ceiling.Limits{TimeoutMs: c.timeoutMs, MemoryMb: c.memoryMb, MaxProcesses: c.limits.Processes, MaxWriteMb: writeMb},
	}
	c.what = "this command (" + commandLine(in.Command) + ")"
	return s.admit(ctx, c.what, req)
}

// admitJS holds a validated execute_js call to the ceiling.
func (s *Server) admitJS(ctx context.Context, in *JSInput, c *jsCall) error {
	c.run.TimeoutMs = s.lower("timeoutMs", in.TimeoutMs != nil, c.run.TimeoutMs)
	c.run.MemoryMb = s.lower("memoryMb", in.MemoryMb != nil, c.run.MemoryMb)
	if max := s.Ceiling().Limit("maxWriteMb", &s.grants); in.MaxWriteBytes == nil && max > 0 && c.maxWrite > int64(max)<<20 {
		c.maxWrite = int64(max) << 20
	}
	req := ceiling.Request{
		Mounts: mountAsks(in.Mounts, c.mounts), AllowNetwork: in.AllowNetwork, AllowHosts: in.AllowHosts,
		Limits: ceiling.Limits{TimeoutMs: c.run.TimeoutMs, MemoryMb: c.run.MemoryMb, MaxWriteMb: int((c.maxWrite + 1<<20 - 1) >> 20)},
	}
	return s.admit(ctx, "this JavaScript call (execute_js)", req)
}

// admitCreate holds copy_then_sync create to the ceiling: its hostPath is
// written by a later sync, and its storagePath by autobox, so both count as
// read-write. A path that is not canonical is left to the store, which refuses it.
func (s *Server) admitCreate(ctx context.Context, in *WorkspaceInput) error {
	var asks []ceiling.MountAsk
	if real, err := filepath.EvalSymlinks(in.HostPath); err == nil && filepath.IsAbs(in.HostPath) && real == filepath.Clean(in.HostPath) {
		asks = append(asks, ceiling.MountAsk{Param: "hostPath", Path: real, Mode: ceiling.ReadWrite})
	}
	if in.StoragePath != "" && filepath.IsAbs(in.StoragePath) {
		asks = append(asks, ceiling.MountAsk{Param: "storagePath", Path: ceiling.Canonical(in.StoragePath), Mode: ceiling.ReadWrite, Storage: true})
	}
	return s.admit(ctx, "this workspace copy (copy_then_sync create of "+in.HostPath+")", ceiling.Request{Mounts: asks})
}

// commandLine is a command's argv for a question, shortened.
func commandLine(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return shownText(s)
}

// shownText escapes what a call chose before a person reads it: no control or
// format character reaches the client's dialog as such.
func shownText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x200b && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// errBeyond reports whether err is a refusal of the ceiling.
func errBeyond(err error) bool { return errors.Is(err, ceiling.ErrBeyond) }

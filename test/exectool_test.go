// How the tests call exec_command and read its result, and the verdicts of
// the probe helper (test/probe) that the denial tests run in the sandbox.

package test

import (
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

type execOut struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        *int   `json:"exitCode"`
	Killed          bool   `json:"killed"`
	DurationMs      float64
	StdoutTruncated bool   `json:"stdoutTruncated"`
	StderrTruncated bool   `json:"stderrTruncated"`
	MountPaths      string `json:"mountPaths"`
	// Error is a refused call's message (a tool error); stderr says it too.
	Error string `json:"error"`
}

func (o execOut) code() int {
	if o.ExitCode == nil {
		return -1000
	}
	return *o.ExitCode
}

func (s *session) exec(args map[string]any) (execOut, bool) {
	s.t.Helper()
	if s.viaSessions {
		return s.execAsSession(args)
	}
	var o execOut
	isErr := s.call("exec_command", args, &o)
	return o, isErr
}

// toolsMount mounts the probe helper read-only at /mnt/tools.
func toolsMount() map[string]any {
	return map[string]any{"hostPath": toolsDir, "sandboxPath": "/mnt/tools", "mode": "ro"}
}

// probe runs the probe helper with extra mounts and returns its output and result.
func (s *session) probe(mounts []map[string]any, extra map[string]any, args ...string) execOut {
	s.t.Helper()
	a := map[string]any{"command": append([]string{"/mnt/tools/probe"}, args...), "mounts": append([]map[string]any{toolsMount()}, mounts...)}
	for k, v := range extra {
		a[k] = v
	}
	o, _ := s.exec(a)
	return o
}

// wantAllowed / wantDenied check a probe's verdict.
func wantAllowed(t *testing.T, what string, o execOut) {
	t.Helper()
	if o.code() != 0 || !strings.HasPrefix(o.Stdout, "ok") {
		t.Errorf("%s: want allowed, got exit %d stdout %q stderr %q", what, o.code(), o.Stdout, o.Stderr)
	}
}

func wantDenied(t *testing.T, what string, o execOut) {
	t.Helper()
	if o.code() != 1 || !strings.HasPrefix(o.Stdout, "denied:") {
		t.Errorf("%s: want denied, got exit %d stdout %q stderr %q", what, o.code(), o.Stdout, o.Stderr)
	}
}

func bash(script string) []string {
	return []string{"/bin/bash", "--noprofile", "--norc", "-c", script}
}

func requireSandbox(t *testing.T) {
	t.Helper()
	if err := jail.Probe().Check(nil); err != nil && jail.Probe().LandlockABI < jail.MinLandlockABI {
		t.Skipf("this kernel cannot sandbox commands: %v", jail.Probe())
	}
}

//go:build linux

package test

import (
	"strings"
	"testing"
)

// TestForkRefusalsNoted: a command that gives up by itself after the kernel
// refused a fork at maxProcesses ("Cannot fork", exit 2, not killed) has the
// refusals in usage.forksRefused and a note in stderr that names the limit;
// one killed for another reason (a timeout) has them too; under a limit it
// does not reach, neither. Through MCP and the command line.
func TestForkRefusalsNoted(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	if !kernelProcessLimit(t, s) {
		t.Skip("commands have no pids cgroup here (it needs root on cgroup v1): the kernel's refusals are not counted")
	}
	type out struct {
		execOut
		Usage struct {
			ForksRefused int `json:"forksRefused"`
		} `json:"usage"`
	}
	var o out
	s.call("exec_command", map[string]any{"command": []string{"sh", "-c", "sleep 5 & sleep 5 & sleep 5 & wait"}, "maxProcesses": 3, "timeoutMs": 10000}, &o)
	if o.Killed || o.code() == 0 || o.Usage.ForksRefused < 1 || !strings.Contains(o.Stderr, "[autobox: maxProcesses 3 refused") {
		t.Errorf("a command that gave up at the process limit: %+v", o)
	}
	o = out{}
	s.call("exec_command", map[string]any{"command": []string{"sh", "-c", "sleep 5 & sleep 5 & sleep 5 & sleep 5 & sleep 10"}, "maxProcesses": 3, "timeoutMs": 1000}, &o)
	if o.Usage.ForksRefused < 1 || !strings.Contains(o.Stderr, "refused") {
		t.Errorf("refusals of a call that went on: %+v", o)
	}
	// Positive control: room for all of them.
	o = out{}
	s.call("exec_command", map[string]any{"command": []string{"sh", "-c", "sleep 0.1 & sleep 0.1 & sleep 0.1 & wait"}, "maxProcesses": 10, "timeoutMs": 10000}, &o)
	if o.code() != 0 || o.Usage.ForksRefused != 0 || strings.Contains(o.Stderr, "[autobox:") {
		t.Errorf("under the limit: %+v", o)
	}
}

func TestCLIForkRefusalsNoted(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	r := h.run("", append([]string{"exec", "--"}, ownCgroupCmd...)...)
	if !hasOwnCgroup(r.stdout, "pids") {
		t.Skip("commands have no pids cgroup here (it needs root on cgroup v1): the kernel's refusals are not counted")
	}
	r = h.run("", "exec", "--max-processes", "3", "--", "sh", "-c", "sleep 5 & sleep 5 & sleep 5 & wait")
	if r.code == 0 || !strings.Contains(r.stderr, "[autobox: --max-processes 3 refused") {
		t.Errorf("command line: %s", r)
	}
}

//go:build linux

package test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestUnjailedWorkersSaid (issue 35 item 8): on a host without Landlock
// (here a server under a seccomp filter that makes Landlock's system calls
// fail, as on a kernel without it), JS workers run without their jail; every
// execute_js result says so, and doctor does, where before only a line in the
// server's log did. Positive control: the same call and doctor on this host
// as it is say nothing of the kind.
func TestUnjailedWorkersSaid(t *testing.T) {
	requireSandbox(t)
	probe := filepath.Join(toolsDir, "probe")
	h := newCLIHome(t)
	cmd := exec.Command(probe, "nolandlock", bin, "doctor")
	cmd.Env = h.env
	out, _ := cmd.CombinedOutput()
	if !regexp.MustCompile(`(?m)^missing +js worker jail +none: this host cannot jail them: .*Landlock missing`).Match(out) {
		t.Errorf("doctor without Landlock:\n%s", out)
	}
	if r := h.run("", "doctor"); !regexp.MustCompile(`(?m)^(ok|info) +js worker jail `).MatchString(r.stdout) {
		t.Errorf("doctor: %s", r)
	}
	// The command line's own output says it too.
	cmd = exec.Command(probe, "nolandlock", bin, "js", "-e", "1 + 1")
	cmd.Env = h.env
	if out, _ := cmd.CombinedOutput(); !regexp.MustCompile(`(?m)^autobox js: the JS worker ran without its jail \(this host cannot jail them: .*Landlock missing`).Match(out) {
		t.Errorf("autobox js without Landlock:\n%s", out)
	}
	if r := h.run("", "js", "-e", "1 + 1"); r.stdout != "2\n" || r.stderr != "" {
		t.Errorf("autobox js: %s", r)
	}

	var o struct {
		OK        bool   `json:"ok"`
		Isolation string `json:"isolation"`
	}
	s := startArgv(t, nil, []string{probe, "nolandlock", bin})
	s.call("execute_js", map[string]any{"code": "1 + 1"}, &o)
	if !o.OK || o.Isolation != "unjailed" {
		t.Errorf("an unjailed worker's result: %+v", o)
	}
	// Positive control.
	s2 := start(t)
	o.Isolation = ""
	s2.call("execute_js", map[string]any{"code": "1 + 1"}, &o)
	if !o.OK || o.Isolation == "" || o.Isolation == "unjailed" {
		t.Errorf("a jailed worker's result: %+v", o)
	}
}

package test

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestCeilingReload: a running server follows its ceiling file. A change holds
// the next calls; a file that no longer reads keeps the ceiling last read in
// force, and the server's log says which file and why; fixed, it is read again.
func TestCeilingReload(t *testing.T) {
	requireSandbox(t)
	policy := writePolicy(t, `{"limits": {"timeoutMs": 60000}}`)
	s := start(t, "serve", "--policy", policy)
	type out struct {
		Error    string `json:"error"`
		ExitCode *int   `json:"exitCode"`
	}
	run := func(timeoutMs int) (out, bool) {
		var o out
		isErr := s.call("exec_command", map[string]any{"command": []string{"true"}, "timeoutMs": timeoutMs}, &o)
		return o, isErr
	}
	refused := func(o out, isErr bool) bool {
		return isErr && strings.Contains(o.Error, `"limits.timeoutMs" rule (`+policy+")")
	}
	ran := func(o out, isErr bool) bool { return !isErr && o.ExitCode != nil && *o.ExitCode == 0 }
	// until calls f until it reports true (the server looks at its file at
	// most once a second).
	until := func(what string, f func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !f(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen\nserver stderr:\n%s", what, s.stderr)
			}
		}
	}
	if !ran(run(5000)) {
		t.Fatal("within the ceiling: refused")
	}
	writeFile(t, policy, `{"limits": {"timeoutMs": 2000}}`)
	until("the lowered limit", func() bool { return refused(run(5000)) })

	writeFile(t, policy, `{"limits": {"timeoutMs": 90000}, "mounts": [}`)
	until("the broken file in the log", func() bool {
		run(1000)
		return strings.Contains(s.stderr.String(), "the ceiling file no longer reads")
	})
	if log := s.stderr.String(); !strings.Contains(log, policy) || !strings.Contains(log, "invalid character") {
		t.Errorf("the log does not name the file and the problem:\n%s", log)
	}
	if !refused(run(5000)) {
		t.Error("a broken file lifted the ceiling last read")
	}
	if !ran(run(1000)) {
		t.Error("positive control, within the ceiling kept: refused")
	}
	// autobox policy says so too.
	cmd := exec.Command(bin, "policy", "--policy", policy)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	policyOut, err := cmd.Output()
	if err == nil || !strings.Contains(string(policyOut), "(does not read)") || !strings.Contains(string(policyOut), "keeps the ceiling it read from it last") {
		t.Errorf("autobox policy on a broken file: %v\n%s", err, policyOut)
	}

	writeFile(t, policy, `{}`)
	until("the fixed file", func() bool { return ran(run(5000)) })
	cmd = exec.Command(bin, "policy", "--policy", policy)
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "reads it again within a second of a change") {
		t.Errorf("autobox policy: %v\n%s", err, out)
	}
}

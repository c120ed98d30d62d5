//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCeilingCLI: the command line holds its calls to the same ceiling file.
func TestCeilingCLI(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	allowed := t.TempDir()
	writeFile(t, filepath.Join(h.dir, "config", "autobox", "policy.json"), `{"mounts": [{"path": "`+allowed+`"}], "allowNetwork": false}`)
	file := filepath.Join(h.dir, "config", "autobox", "policy.json")
	h.want(h.run("", "exec", "--mount", allowed+":/mnt/a:rw", "--", "touch", "/mnt/a/ran"), 125, "", `"mounts" rule (`+file+")")
	if _, err := os.Stat(filepath.Join(allowed, "ran")); err == nil {
		t.Error("the refused command ran")
	}
	h.want(h.run("", "exec", "--network", "--", "true"), 125, "", `"allowNetwork" rule`)
	h.want(h.run("", "js", "--mount", allowed+":/mnt/a:rw", "-e", "1"), 125, "", `"mounts" rule`)
	h.want(h.run("", "exec", "--mount", allowed+":/mnt/a", "--", "ls", "/mnt/a"), 0, "", "")
	r := h.run("", "policy")
	if r.code != 0 || !strings.Contains(r.stdout, allowed+" ro") || !strings.Contains(r.stdout, "file "+file) || !strings.Contains(r.stdout, "~/.ssh") {
		t.Errorf("autobox policy: %s", r)
	}
}

// TestCeilingTaskNative: `autobox task run --kind native` takes the permissions
// exec_command does, and is held to the same ceiling file: its network (on
// unless --no-network) is refused by a ceiling without it, before anything runs;
// with --no-network the same run works.
func TestCeilingTaskNative(t *testing.T) {
	requireSandbox(t)
	e := newTaskEnv(t, taskUsers(t)[0])
	policy := filepath.Join(e.home, ".config", "autobox", "policy.json")
	writeFile(t, policy, `{"allowNetwork": false, "limits": {"maxProcesses": 100}}`)
	if e.user.cred != nil {
		for _, d := range []string{filepath.Join(e.home, ".config"), filepath.Dir(policy), policy} {
			os.Chown(d, int(e.user.cred.Uid), int(e.user.cred.Gid))
		}
	}
	code, out := e.autobox("run", "--kind", "native", "--max-processes", "100", "--", "/bin/sh", "-c", "echo ran > ran")
	e.locate()
	if code == 0 || !strings.Contains(out, `"allowNetwork" rule (`+policy+")") {
		t.Errorf("a run with the network: exit %d\n%s", code, out)
	}
	if e.worktree != "" {
		if _, err := os.Stat(filepath.Join(e.worktree, "ran")); err == nil {
			t.Error("the refused harness ran")
		}
	}
	code, out = e.autobox("run", "--kind", "native", "--no-network", "--", "/bin/sh", "-c", "echo ran > ran")
	if code == 0 || !strings.Contains(out, `"limits.maxProcesses" rule`) || !strings.Contains(out, "--max-processes 256") {
		t.Errorf("a run past maxProcesses (its default 256): exit %d\n%s", code, out)
	}
	code, out = e.autobox("run", "--kind", "native", "--no-network", "--max-processes", "100", "--", "/bin/sh", "-c", "echo ran > ran")
	e.locate()
	if code != 0 || e.worktree == "" {
		t.Fatalf("positive control: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.worktree, "ran")); err != nil {
		t.Errorf("positive control: the harness did not run: %v", err)
	}
}

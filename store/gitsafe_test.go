package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyncRefusesGitConfiguration: what the sandboxed code wrote into a
// workspace's git configuration, hooks, a .git file or a nested repository is
// a conflict, never synced to the host, where git would run it; git's data
// (objects, refs, logs, the index, HEAD) and ordinary files sync (the control).
func TestSyncRefusesGitConfiguration(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	for _, c := range []struct {
		name, path string
		edit       func(w string)
	}{
		{"config", ".git/config", func(w string) { appendTo(t, w, ".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n") }},
		{"a hook", ".git/hooks/post-checkout", func(w string) { writeFile(t, w, ".git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n") }},
		{"config.worktree", ".git/config.worktree", func(w string) { writeFile(t, w, ".git/config.worktree", "[core]\n\tpager = x\n") }},
		{"a submodule's config", ".git/modules/m/config", func(w string) { writeFile(t, w, ".git/modules/m/config", "[core]\n\tpager = x\n") }},
		{"info/attributes", ".git/info/attributes", func(w string) { writeFile(t, w, ".git/info/attributes", "* filter=x\n") }},
		{"a nested repository", "sub/.git", func(w string) { writeFile(t, w, "sub/.git/config", "[core]\n\tfsmonitor = x\n") }},
		{".git made a file", ".git", func(w string) {
			os.RemoveAll(filepath.Join(w, ".git"))
			writeFile(t, w, ".git", "gitdir: /elsewhere\n")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if out, err := exec.Command(git, "init", "-q", e.src).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			writeFile(t, e.src, "a.txt", "a")
			res := e.create()
			w := e.work(res.WorkspaceID)
			c.edit(w)
			writeFile(t, w, "a.txt", "edited") // an ordinary change beside it
			st := e.status(res.WorkspaceID)
			found := false
			for _, cf := range st.Conflicts {
				if cf.Path == c.path && strings.Contains(cf.Reason, "git") {
					found = true
				}
			}
			if !found {
				t.Fatalf("no conflict for %s: %+v", c.path, st.Conflicts)
			}
			before := snapshot(t, e.src)
			if r := e.sync(res.WorkspaceID); r.OK || len(r.Applied) != 0 {
				t.Fatalf("sync applied something: %+v", r)
			}
			if after := snapshot(t, e.src); len(after) != len(before) || readFile(t, e.src, "a.txt") != "a" {
				t.Fatalf("the host changed")
			}
		})
	}
	// Control: a commit in the workspace (objects, refs, logs, index, HEAD) and an
	// ordinary edit sync.
	e := newEnv(t)
	run := func(dir string, args ...string) {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run(e.src, "init", "-q")
	writeFile(t, e.src, "a.txt", "a")
	run(e.src, "add", "a.txt")
	run(e.src, "commit", "-q", "-m", "one")
	res := e.create()
	w := e.work(res.WorkspaceID)
	writeFile(t, w, "a.txt", "edited")
	run(w, "commit", "-q", "-am", "two")
	e.mustSync(res.WorkspaceID)
	cmd := exec.Command(git, "log", "--oneline")
	cmd.Dir = e.src
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "two") {
		t.Errorf("the workspace's commit on the host: %v %s", err, out)
	}
}

func appendTo(t *testing.T, dir, rel, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, rel), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(s)
}

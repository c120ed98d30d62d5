package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sandboxedWT is a Worktree of a sandboxed kind (docker, whose Workspace needs no jail and
// no docker: the ensure of the embedded Worktree is what is tested) with its log.
func sandboxedWT(t *testing.T, root, tasks string) (*Worktree, *bytes.Buffer) {
	t.Helper()
	log := &bytes.Buffer{}
	w, err := newWorktree(&Options{Project: root, TasksDir: tasks, Log: log}, KindDocker)
	if err != nil {
		t.Fatal(err)
	}
	return w, log
}

func ensureT(t *testing.T, w *Worktree, id string) record {
	t.Helper()
	rec, err := w.ensure(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Every way of changing a link file is undone when autobox hands the worktree out; a task
// no sandbox ever had is left as the person made it.
func TestSecureRestoresLinks(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	gitT(t, newRepo(t), "init", "-q", "--bare", elsewhere)
	tampers := []struct {
		name string
		do   func(t *testing.T, rec record)
	}{
		{"dotgit rewritten", func(t *testing.T, rec record) {
			writeFile(t, filepath.Join(rec.Path, ".git"), "gitdir: "+elsewhere+"\n")
		}},
		{"dotgit directory", func(t *testing.T, rec record) {
			os.Remove(filepath.Join(rec.Path, ".git"))
			gitT(t, rec.Path, "init", "-q", "--bare", filepath.Join(rec.Path, ".git"))
		}},
		{"dotgit symlink", func(t *testing.T, rec record) {
			os.Remove(filepath.Join(rec.Path, ".git"))
			os.Symlink(elsewhere, filepath.Join(rec.Path, ".git"))
		}},
		{"dotgit hard link", func(t *testing.T, rec record) {
			os.Link(filepath.Join(rec.Path, ".git"), filepath.Join(rec.Path, "other-name"))
		}},
		{"dotgit fifo", func(t *testing.T, rec record) {
			os.Remove(filepath.Join(rec.Path, ".git"))
			if err := syscall.Mkfifo(filepath.Join(rec.Path, ".git"), 0o644); err != nil {
				t.Skip(err)
			}
		}},
		{"dotgit missing", func(t *testing.T, rec record) { os.Remove(filepath.Join(rec.Path, ".git")) }},
		{"commondir rewritten", func(t *testing.T, rec record) {
			writeFile(t, filepath.Join(rec.Admin, "commondir"), elsewhere+"\n")
		}},
		{"commondir missing", func(t *testing.T, rec record) {
			os.Remove(filepath.Join(rec.Admin, "commondir"))
			writeFile(t, filepath.Join(rec.Admin, "config"), "[core]\n\tfsmonitor = false\n")
		}},
		{"commondir directory", func(t *testing.T, rec record) {
			os.Remove(filepath.Join(rec.Admin, "commondir"))
			os.Mkdir(filepath.Join(rec.Admin, "commondir"), 0o755)
		}},
		{"gitdir rewritten", func(t *testing.T, rec record) {
			writeFile(t, filepath.Join(rec.Admin, "gitdir"), "/nonexistent/.git\n")
		}},
		{"config.worktree made", func(t *testing.T, rec record) {
			writeFile(t, filepath.Join(rec.Admin, "config.worktree"), "[alias]\n\tst = !true\n")
		}},
	}
	for _, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			const id = "r"
			root, tasks := newRepo(t), tasksDir(t)
			w, log := sandboxedWT(t, root, tasks)
			rec := ensureT(t, w, id)
			want := rec.Links
			tc.do(t, rec)
			if len(changedLinks(rec)) == 0 {
				t.Fatal("the tamper changed nothing")
			}
			rec = ensureT(t, w, id)
			if changed := changedLinks(rec); len(changed) > 0 || *rec.Links != *want {
				t.Fatalf("after Workspace: changed %v, links %+v want %+v", changed, rec.Links, want)
			}
			if !strings.Contains(log.String(), "task "+id+": re") {
				t.Errorf("log says nothing of the restore: %q", log.String())
			}
			if got := gitT(t, rec.Path, "rev-parse", "--path-format=absolute", "--git-common-dir"); got != filepath.Join(root, ".git") {
				t.Errorf("git in the worktree finds %s", got)
			}
			// Positive control: a task of the worktree kind is the person's; autobox does
			// not restore its links (git's own prune may still drop its registration).
			log.Reset()
			host, err := newWorktree(&Options{Project: root, TasksDir: tasks, Log: log}, KindWorktree)
			if err != nil {
				t.Fatal(err)
			}
			hrec, err := host.ensure(context.Background(), "host")
			if err != nil {
				t.Fatal(err)
			}
			tc.do(t, hrec)
			if _, err := host.ensure(context.Background(), "host"); err != nil && !errors.Is(err, ErrStranded) {
				t.Fatal(err)
			}
			if len(changedLinks(hrec)) == 0 || log.Len() > 0 {
				t.Errorf("a worktree-kind task's links were restored: %q", log.String())
			}
		})
	}
}

// Git directories below the top and unfinished operations are moved into the task's
// state, once, after a sandbox had the worktree; the files of a nested repository stay.
func TestSecureQuarantines(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	w, log := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "q")
	if _, err := w.expose(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	gitT(t, rec.Path, "init", "-q", "a/b")
	writeFile(t, filepath.Join(rec.Path, "a", "b", "file"), "kept\n")
	os.Mkdir(filepath.Join(rec.Path, "c"), 0o755)
	writeFile(t, filepath.Join(rec.Path, "c", ".git"), "gitdir: /elsewhere\n")
	os.MkdirAll(filepath.Join(rec.Path, "d", ".GIT"), 0o755)
	for _, name := range []string{"rebase-merge", "sequencer", "modules/sub"} {
		os.MkdirAll(filepath.Join(rec.Admin, name), 0o755)
		writeFile(t, filepath.Join(rec.Admin, name, "todo"), "exec true\n")
	}
	rec = ensureT(t, w, "q")
	for _, gone := range []string{"a/b/.git", "c/.git", "d/.GIT"} {
		mustExist(t, filepath.Join(rec.Path, gone), false)
	}
	for _, gone := range []string{"rebase-merge", "sequencer", "modules"} {
		mustExist(t, filepath.Join(rec.Admin, gone), false)
	}
	mustExist(t, filepath.Join(rec.Path, "a", "b", "file"), true)
	mustExist(t, filepath.Join(rec.Path, ".git"), true)
	moved, _ := filepath.Glob(filepath.Join(w.paths("q").state, "quarantine", "*", "worktree", "a", "b", ".git", "HEAD"))
	if len(moved) != 1 || strings.Count(log.String(), "moved ") != 6 {
		t.Fatalf("quarantine: %v\n%s", moved, log.String())
	}
	if rec.Unchecked {
		t.Fatal("still unchecked after the check")
	}
	// Positive control: what the person makes after the check is theirs.
	gitT(t, rec.Path, "init", "-q", "mine")
	rec = ensureT(t, w, "q")
	mustExist(t, filepath.Join(rec.Path, "mine", ".git"), true)
}

// List reports a changed worktree without changing it, and runs no git in it.
func TestListReportsUnchecked(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w, _ := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "l")
	writeFile(t, filepath.Join(rec.Path, ".git"), "gitdir: /elsewhere\n")
	infos, err := w.List(context.Background())
	if err != nil || len(infos) != 1 || !infos[0].Unchecked || !strings.Contains(infos[0].Detail, ".git (its content had changed)") {
		t.Fatalf("List = %+v, %v", infos, err)
	}
	if got := readFileT(t, filepath.Join(rec.Path, ".git")); got != "gitdir: /elsewhere\n" {
		t.Fatalf("List changed .git: %q", got)
	}
	ensureT(t, w, "l")
	if infos, err = w.List(context.Background()); err != nil || infos[0].Unchecked || infos[0].Dirty {
		t.Fatalf("List after Workspace = %+v, %v", infos, err)
	}
}

// Cleanup of a changed worktree restores it when it keeps it, and removes it, pins and
// all, when forced.
func TestCleanupTampered(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	w, _ := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "c")
	os.Remove(filepath.Join(rec.Path, ".git"))
	gitT(t, root, "clone", "-q", "--bare", root, filepath.Join(rec.Path, ".git"))
	writeFile(t, filepath.Join(rec.Path, "wip"), "x\n")
	res, err := w.Cleanup(ctx, "c", false)
	if err != nil || res.Removed || !res.Dirty || res.Detail != "1 uncommitted file(s)" {
		t.Fatalf("Cleanup = %+v, %v", res, err)
	}
	if len(changedLinks(rec)) > 0 {
		t.Fatalf("kept worktree not restored: %v", changedLinks(rec))
	}
	pinned := pin(rec) // as a run killed with SIGKILL leaves them
	t.Cleanup(func() { unpin(rec) })
	res, err = w.Cleanup(ctx, "c", true)
	if err != nil || !res.Removed {
		t.Fatalf("forced Cleanup (pinned %v) = %+v, %v", pinned, res, err)
	}
	mustExist(t, rec.Path, false)
	mustExist(t, rec.Admin, false)
}

// A gitdir pointing nowhere must not make autobox's `git worktree prune` drop the
// registration, whichever task autobox works on.
func TestPruneAfterGitdirTampered(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w, _ := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "a")
	writeFile(t, filepath.Join(rec.Admin, "gitdir"), "/nonexistent/.git\n")
	ensureT(t, w, "b")
	if list := gitT(t, root, "worktree", "list"); !strings.Contains(list, rec.Path) {
		t.Fatalf("task a's worktree was pruned:\n%s", list)
	}
	gitT(t, rec.Path, "status", "--porcelain")
}

// A record from before autobox kept links is checked as if a sandbox had just had it.
func TestLegacyRecordChecked(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w, _ := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "old")
	legacy := map[string]any{"id": rec.ID, "kind": "native", "root": rec.Root, "path": rec.Path, "branch": rec.Branch, "admin": rec.Admin}
	data, _ := json.Marshal(legacy)
	writeFile(t, w.paths("old").record, string(data))
	gitT(t, rec.Path, "init", "-q", "nested")
	rec = ensureT(t, w, "old")
	mustExist(t, filepath.Join(rec.Path, "nested", ".git"), false)
	saved, err := readRecord(w.paths("old").record)
	if err != nil || saved.Links == nil || saved.Unchecked || !saved.Sandboxed {
		t.Fatalf("saved record %+v, %v", saved, err)
	}
}

// An immutable file can be neither written, replaced, linked nor removed, and unpin
// undoes pin. It needs root and a filesystem with the attribute.
func TestPinUnpin(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w, _ := sandboxedWT(t, root, tasks)
	rec := ensureT(t, w, "p")
	if !pin(rec) {
		unpin(rec)
		t.Skip("cannot make files immutable here (not root, or no attribute on this filesystem)")
	}
	t.Cleanup(func() { unpin(rec) })
	dotgit := filepath.Join(rec.Path, ".git")
	for name, err := range map[string]error{
		"write":  os.WriteFile(dotgit, []byte("gitdir: /x\n"), 0o644),
		"rename": os.Rename(filepath.Join(rec.Path, "README"), dotgit),
		"link":   os.Link(dotgit, filepath.Join(rec.Path, "alias")),
		"remove": os.Remove(filepath.Join(rec.Admin, "commondir")),
	} {
		if err == nil {
			t.Errorf("%s of a pinned link file succeeded", name)
		}
	}
	if err := unpin(rec); err != nil {
		t.Fatal(err)
	}
	for _, f := range rec.linkFiles() {
		if isImmutable(f.path) {
			t.Errorf("%s still immutable", f.path)
		}
	}
	// Positive control: unpinned, the same write works.
	if err := os.WriteFile(filepath.Join(rec.Admin, "gitdir"), []byte(rec.Links.GitDir), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The native kind checks the worktree when the harness has ended: a nested repository the
// harness made is moved away, and the pins are gone.
func TestNativeRunChecksAfterwards(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	n := newNative(t, root, tasks, nil)
	log := &bytes.Buffer{}
	n.log = log
	code, out := runScript(t, n, "after", `git init -q vendored && git -C vendored config core.fsmonitor "touch /pwned"`)
	if code != 0 {
		t.Fatalf("harness: exit %d\n%s", code, out)
	}
	wt, _ := n.Path("after")
	mustExist(t, filepath.Join(wt, "vendored", ".git"), false)
	if !strings.Contains(log.String(), "vendored/.git") {
		t.Errorf("log: %q", log.String())
	}
	if isImmutable(filepath.Join(wt, ".git")) {
		t.Error(".git still immutable after the run")
	}
	if rec, _ := readRecord(n.paths("after").record); rec.Unchecked || !rec.Sandboxed {
		t.Errorf("record after the run: %+v", rec)
	}
}

// The docker kind: a container (a fake docker, on the host) that rewrites .git and makes a
// nested repository leaves a worktree that is restored once docker run returns.
func TestDockerRunChecksAfterwards(t *testing.T) {
	dir := t.TempDir()
	fake := "#!/bin/sh\n[ \"$1\" = run ] || exit 0\n" +
		"while [ $# -gt 0 ]; do case \"$1\" in -w) cd \"$2\"; shift 2;; *) shift;; esac; done\n" +
		"printf 'gitdir: /elsewhere\\n' > .git 2>/dev/null\n" +
		"git init -q nested\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	root, tasks := newRepo(t), tasksDir(t)
	log := &bytes.Buffer{}
	d, err := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks, Log: log}, Image: "img", Docker: filepath.Join(dir, "docker")})
	if err != nil {
		t.Fatal(err)
	}
	if code, out := runScript(t, d, "dk", "harness"); code != 0 {
		t.Fatalf("docker run: exit %d\n%s", code, out)
	}
	rec, _ := readRecord(d.paths("dk").record)
	if changed := changedLinks(rec); len(changed) > 0 {
		t.Fatalf("links after the run: %v", changed)
	}
	mustExist(t, filepath.Join(rec.Path, "nested", ".git"), false)
	if out, err := exec.Command("git", "-C", rec.Path, "status", "--porcelain").CombinedOutput(); err != nil {
		t.Fatalf("git status: %v\n%s", err, out)
	}
}

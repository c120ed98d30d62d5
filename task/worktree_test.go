package task

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestValidateID(t *testing.T) {
	good := []string{"a", "7", "task-1", "T_2.x", "abc.lockx", strings.Repeat("a", MaxIDLength)}
	for _, id := range good {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	bad := []string{"", ".", "..", "../x", "x/../y", "a/b", "/abs", "-x", ".x", "_x", "a..b", "x.lock",
		"x.", "a b", "a\x00b", "a\nb", "a:b", "a@{1}", "a~1", "a^", "x*", "é", `a\b`,
		strings.Repeat("a", MaxIDLength+1)}
	for _, id := range bad {
		if err := ValidateID(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

// Hostile ids are refused by every entry point before anything touches the disk or git.
func TestHostileIDsTouchNothing(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w := newWT(t, root, tasks)
	before, branches := readTree(t, tasks), gitT(t, root, "branch", "--list")
	ctx := context.Background()
	for _, id := range []string{"../escape", "..", "a/b", "-rf", "x.lock", strings.Repeat("z", 65)} {
		if _, err := w.Workspace(ctx, id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Workspace(%q) = %v", id, err)
		}
		if _, err := w.Cleanup(ctx, id, true); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Cleanup(%q) = %v", id, err)
		}
		if err := w.Stop(ctx, id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Stop(%q) = %v", id, err)
		}
		if _, err := w.Wrap([]string{"true"}, WrapOptions{ID: id}); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Wrap(%q) = %v", id, err)
		}
	}
	if after := readTree(t, tasks); !slices.Equal(before, after) {
		t.Errorf("tasks dir changed: %v -> %v", before, after)
	}
	if after := gitT(t, root, "branch", "--list"); after != branches {
		t.Errorf("branches changed: %q -> %q", branches, after)
	}
	// Positive control: valid ids, even ones that look like autobox's own file names.
	for _, id := range []string{"ok", "lock", "scratch", "task.json"} {
		workspaceT(t, w, id)
	}
}

func TestWorkspaceIdempotentAndDeterministic(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w := newWT(t, root, tasks)
	cwd := workspaceT(t, w, "t1")
	sum := sha256.Sum256([]byte(root))
	want := filepath.Join(tasks, "proj-"+hex.EncodeToString(sum[:4]), "t1")
	if cwd != want {
		t.Fatalf("cwd = %s, want %s", cwd, want)
	}
	if got := gitT(t, cwd, "symbolic-ref", "--short", "HEAD"); got != "autobox/t1" {
		t.Fatalf("branch = %q", got)
	}
	writeFile(t, filepath.Join(cwd, "work.txt"), "in progress\n")

	// The same project named through a symlink and a subdirectory resolves to the same
	// canonical root, so the same path; the second call reuses the worktree as it is.
	link := filepath.Join(filepath.Dir(root), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	w2 := newWT(t, filepath.Join(link, "sub"), tasks)
	cwd2 := workspaceT(t, w2, "t1")
	if cwd2 != cwd {
		t.Fatalf("second Workspace = %s, want %s", cwd2, cwd)
	}
	if data, err := os.ReadFile(filepath.Join(cwd, "work.txt")); err != nil || string(data) != "in progress\n" {
		t.Fatalf("work.txt after reuse: %q, %v", data, err)
	}
	if n := strings.Count(gitT(t, root, "worktree", "list", "--porcelain"), "worktree "); n != 2 {
		t.Fatalf("%d worktrees registered, want 2", n)
	}
}

func TestWorkspaceReusesExistingBranch(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	gitT(t, root, "checkout", "-q", "-b", "autobox/old")
	writeFile(t, filepath.Join(root, "old.txt"), "earlier work\n")
	gitT(t, root, "add", "old.txt")
	gitT(t, root, "commit", "-q", "-m", "earlier work")
	tip := gitT(t, root, "rev-parse", "HEAD")
	gitT(t, root, "checkout", "-q", "main")

	// Base names main, but the existing branch wins.
	w, err := NewWorktree(&Options{Project: root, TasksDir: tasks, Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	cwd := workspaceT(t, w, "old")
	if got := gitT(t, cwd, "rev-parse", "HEAD"); got != tip {
		t.Fatalf("HEAD = %s, want the existing branch tip %s", got, tip)
	}
	mustExist(t, filepath.Join(cwd, "old.txt"), true)

	// A new branch starts at Base.
	first := gitT(t, root, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(root, "README"), "second\n")
	gitT(t, root, "commit", "-q", "-am", "second")
	w, err = NewWorktree(&Options{Project: root, TasksDir: tasks, Base: first})
	if err != nil {
		t.Fatal(err)
	}
	cwd = workspaceT(t, w, "fresh")
	if got := gitT(t, cwd, "rev-parse", "HEAD"); got != first {
		t.Fatalf("new branch at %s, want base %s", got, first)
	}
}

func TestStaleRegistrationPruned(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	w := newWT(t, root, tasks)
	cwd := workspaceT(t, w, "gone")
	// Someone deletes the directory; git still lists the worktree until it is pruned.
	if err := os.RemoveAll(cwd); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Workspace(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	mustExist(t, filepath.Join(cwd, "README"), true)
}

func TestCleanupDirtyRefusedThenForcedKeepsBranch(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	w := newWT(t, root, tasks)
	cwd := workspaceT(t, w, "d")
	// Committed work, then three uncommitted files: modified, untracked, untracked in a dir.
	writeFile(t, filepath.Join(cwd, "done.txt"), "committed\n")
	gitT(t, cwd, "add", "done.txt")
	gitT(t, cwd, "commit", "-q", "-m", "task work")
	tip := gitT(t, cwd, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(cwd, "README"), "modified\n")
	writeFile(t, filepath.Join(cwd, "new.txt"), "untracked\n")
	os.Mkdir(filepath.Join(cwd, "dir"), 0o755)
	writeFile(t, filepath.Join(cwd, "dir", "deep.txt"), "untracked\n")

	res, err := w.Cleanup(ctx, "d", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (CleanupResult{Removed: false, Dirty: true, Detail: "3 uncommitted file(s)"}); res != want {
		t.Fatalf("unforced Cleanup = %+v, want %+v", res, want)
	}
	mustExist(t, filepath.Join(cwd, "dir", "deep.txt"), true)
	mustExist(t, w.paths("d").record, true)

	res, err = w.Cleanup(ctx, "d", true)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Removed || !res.Dirty || !strings.Contains(res.Detail, "discarded 3") {
		t.Fatalf("forced Cleanup = %+v", res)
	}
	mustExist(t, cwd, false)
	mustExist(t, w.paths("d").state, false)
	if got := gitT(t, root, "rev-parse", "autobox/d"); got != tip {
		t.Fatalf("branch autobox/d = %s, want %s (kept)", got, tip)
	}
	if list := gitT(t, root, "worktree", "list", "--porcelain"); strings.Contains(list, cwd) {
		t.Fatalf("worktree still registered:\n%s", list)
	}

	// Idempotent: a missing task is a zero result.
	if res, err = w.Cleanup(ctx, "d", false); err != nil || res != (CleanupResult{}) {
		t.Fatalf("second Cleanup = %+v, %v", res, err)
	}
	if res, err = w.Cleanup(ctx, "never", true); err != nil || res != (CleanupResult{}) {
		t.Fatalf("Cleanup of a task never made = %+v, %v", res, err)
	}
	// Workspace again picks the kept branch up.
	cwd = workspaceT(t, w, "d")
	mustExist(t, filepath.Join(cwd, "done.txt"), true)
}

func TestCleanupClean(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	w := newWT(t, root, tasks)
	cwd := workspaceT(t, w, "c")
	res, err := w.Cleanup(ctx, "c", false)
	if err != nil || !res.Removed || res.Dirty {
		t.Fatalf("Cleanup = %+v, %v", res, err)
	}
	mustExist(t, cwd, false)
	gitT(t, root, "rev-parse", "--verify", "autobox/c")
}

func TestStrandedWorktreeReported(t *testing.T) {
	root, other, tasks := newRepo(t), newRepo(t), tasksDir(t)
	ctx := context.Background()
	w := newWT(t, root, tasks)
	path, err := w.Path("x")
	if err != nil {
		t.Fatal(err)
	}
	// Another repository's worktree sits where this project's task x belongs.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	gitT(t, other, "worktree", "add", "-q", "-b", "elsewhere", path)

	_, err = w.Workspace(ctx, "x")
	if !errors.Is(err, ErrStranded) || !strings.Contains(err.Error(), filepath.Join(other, ".git")) {
		t.Fatalf("Workspace = %v, want ErrStranded naming %s", err, other)
	}
	if _, err := w.Cleanup(ctx, "x", true); !errors.Is(err, ErrStranded) {
		t.Fatalf("forced Cleanup = %v, want ErrStranded", err)
	}
	mustExist(t, filepath.Join(path, "README"), true) // reported, not removed
	if got := gitT(t, path, "symbolic-ref", "--short", "HEAD"); got != "elsewhere" {
		t.Fatalf("stranded worktree's branch = %q", got)
	}

	// A directory that is no worktree at all is stranded too; an empty one is reused.
	junk, _ := w.Path("junk")
	os.MkdirAll(junk, 0o755)
	writeFile(t, filepath.Join(junk, "file"), "x")
	if _, err := w.Workspace(ctx, "junk"); !errors.Is(err, ErrStranded) {
		t.Fatalf("Workspace over a plain directory = %v, want ErrStranded", err)
	}
	empty, _ := w.Path("empty")
	os.MkdirAll(empty, 0o755)
	if _, err := w.Workspace(ctx, "empty"); err != nil {
		t.Fatalf("Workspace over an empty directory: %v", err)
	}
	// Positive control: once the other repository's worktree is gone, x is created.
	gitT(t, other, "worktree", "remove", "--force", path)
	if _, err := w.Workspace(ctx, "x"); err != nil {
		t.Fatal(err)
	}
}

// GIT_* variables in the caller's environment must not redirect autobox's git commands.
func TestCallerGitEnvironmentIgnored(t *testing.T) {
	root, decoy, tasks := newRepo(t), newRepo(t), tasksDir(t)
	t.Setenv("GIT_DIR", filepath.Join(decoy, ".git"))
	t.Setenv("GIT_WORK_TREE", decoy)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(decoy, ".git", "index"))
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", "/nonexistent")
	w := newWT(t, root, tasks)
	if w.Root() != root {
		t.Fatalf("root = %s, want %s", w.Root(), root)
	}
	ctx := context.Background()
	if _, err := w.Workspace(ctx, "e"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_COUNT"} {
		os.Unsetenv(k)
	}
	gitT(t, root, "rev-parse", "--verify", "autobox/e")
	if out := gitT(t, decoy, "branch", "--list", "autobox/*"); out != "" {
		t.Fatalf("decoy repository got branches: %q", out)
	}
}

func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir)) // ignored by autobox, like any GIT_*
	_, err := NewWorktree(&Options{Project: dir, TasksDir: tasksDir(t)})
	if !errors.Is(err, ErrNotRepository) {
		t.Fatalf("NewWorktree outside a repository = %v", err)
	}
}

func TestWorktreeWrapAndEndpoint(t *testing.T) {
	w := newWT(t, newRepo(t), tasksDir(t))
	argv := []string{"claude", "-p", "hi"}
	got, err := w.Wrap(argv, WrapOptions{ID: "w", Env: []string{"KEY=secret"}})
	if err != nil || !slices.Equal(got, argv) {
		t.Fatalf("Wrap = %v, %v; want the identity", got, err)
	}
	if u, err := w.Endpoint(8080); err != nil || u != "http://127.0.0.1:8080" {
		t.Fatalf("Endpoint = %q, %v", u, err)
	}
	for _, p := range []int{0, -1, 65536} {
		if _, err := w.Endpoint(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("Endpoint(%d) = %v", p, err)
		}
	}
	if _, err := w.Wrap(nil, WrapOptions{ID: "w"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Wrap(empty) = %v", err)
	}
	if _, err := w.Wrap(argv, WrapOptions{ID: "w", Env: []string{"BAD NAME=x"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Wrap(bad env) = %v", err)
	}
}

// Concurrent Workspace calls for one task (from two orchestrators) both get the worktree.
func TestWorkspaceConcurrent(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	w1, w2 := newWT(t, root, tasks), newWT(t, root, tasks)
	errs := make(chan error, 8)
	paths := make(chan string, 8)
	for i := 0; i < 8; i++ {
		w := w1
		if i%2 == 1 {
			w = w2
		}
		go func() {
			p, err := w.Workspace(context.Background(), "race")
			errs <- err
			paths <- p
		}()
	}
	want, _ := w1.Path("race")
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if p := <-paths; p != want {
			t.Fatalf("path %s, want %s", p, want)
		}
	}
}

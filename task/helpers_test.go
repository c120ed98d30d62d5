package task

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gitT runs git in dir for test setup, with an identity, and fails the test on error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"}, args...)
	out, err := git(context.Background(), dir, nil, full...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newRepo makes a repository with one commit on main and returns its canonical root.
func newRepo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "proj")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, root, "init", "-q")
	writeFile(t, filepath.Join(root, "README"), "hello\n")
	gitT(t, root, "add", "README")
	gitT(t, root, "commit", "-q", "-m", "initial")
	return root
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tasksDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func newWT(t *testing.T, root, tasks string) *Worktree {
	t.Helper()
	w, err := NewWorktree(&Options{Project: root, TasksDir: tasks})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustExist(t *testing.T, path string, want bool) {
	t.Helper()
	ok, err := exists(path)
	if err != nil {
		t.Fatal(err)
	}
	if ok != want {
		t.Fatalf("%s exists = %v, want %v", path, ok, want)
	}
}

// readTree lists every path below dir, for "nothing was created" checks.
func readTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		out = append(out, strings.TrimPrefix(p, dir))
		return nil
	})
	return out
}

// workspaceT is sb.Workspace for test setup.
func workspaceT(t *testing.T, sb Sandbox, id string) string {
	t.Helper()
	cwd, err := sb.Workspace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return cwd
}

// spawnUntil starts argv (with env added to this environment) and waits until the file
// ready exists. It returns the process's exit and its combined output. At the end of the
// test the process gets SIGTERM, which makes `autobox task run` kill its tree.
func spawnUntil(t *testing.T, argv, env []string, ready string) (<-chan error, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM) })
	for !fileExists(ready) {
		select {
		case err := <-exited:
			t.Fatalf("%s exited before %s existed: %v\n%s", argv[0], ready, err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return exited, out
}

package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitEnv is the caller's environment without any GIT_* variable (GIT_DIR, GIT_WORK_TREE,
// GIT_INDEX_FILE, GIT_CONFIG_* ... would redirect every command), plus extra.
// HOME stays: the user's global configuration (identity, safe.directory) is theirs.
func gitEnv(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+2)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	// No credential prompts from a background tool; untranslated messages in our errors.
	env = append(env, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	return append(env, extra...)
}

// git runs git in dir with the controlled environment plus extraEnv and returns its standard
// output without the trailing newline. A failure carries git's standard error.
func git(ctx context.Context, dir string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// gitExitCode is the exit status of a git failure, or -1 if git did not run to an exit.
func gitExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// repo is a project resolved once: absolute and canonical paths.
type repo struct {
	root   string // top level of the working tree the project names
	common string // the repository's git directory shared by all worktrees
}

// resolveRepo canonicalises dir ("" = current directory) and finds its repository.
func resolveRepo(ctx context.Context, dir string) (repo, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return repo{}, fmt.Errorf("project %s: %w", dir, err)
	}
	abs, err = filepath.EvalSymlinks(abs)
	if err != nil {
		return repo{}, fmt.Errorf("project %s: %w", dir, err)
	}
	out, err := git(ctx, abs, nil, "rev-parse", "--path-format=absolute", "--is-bare-repository", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return repo{}, fmt.Errorf("%w: %s: %w", ErrNotRepository, abs, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || lines[0] != "false" {
		return repo{}, fmt.Errorf("%w: %s is a bare repository or has no working tree", ErrNotRepository, abs)
	}
	var r repo
	if r.root, err = filepath.EvalSymlinks(lines[1]); err != nil {
		return repo{}, fmt.Errorf("project root %s: %w", lines[1], err)
	}
	if r.common, err = filepath.EvalSymlinks(lines[2]); err != nil {
		return repo{}, fmt.Errorf("git directory %s: %w", lines[2], err)
	}
	return r, nil
}

// pinned is the environment for host git commands inside a task worktree: the git directory,
// common directory and work tree are given, so the worktree's .git file and the commondir
// file of its admin directory (both writable by a native sandbox) are never read.
func pinned(common, admin, worktree string) []string {
	// GIT_OPTIONAL_LOCKS=0: status must not take index.lock under a harness's git.
	return []string{"GIT_DIR=" + admin, "GIT_COMMON_DIR=" + common, "GIT_WORK_TREE=" + worktree, "GIT_OPTIONAL_LOCKS=0"}
}

// dirtyCount counts the entries of `git status --porcelain --untracked-files=all`.
// Submodules are compared by commit only (--ignore-submodules=dirty) so that git does not
// start a status inside a submodule, whose git directory a native sandbox could have written.
func dirtyCount(ctx context.Context, common, admin, worktree string) (int, error) {
	out, err := git(ctx, worktree, pinned(common, admin, worktree),
		"status", "--porcelain", "--untracked-files=all", "--ignore-submodules=dirty")
	if err != nil {
		return 0, fmt.Errorf("status of %s: %w", worktree, err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if line != "" {
			n++
		}
	}
	return n, nil
}

// branchExists reports whether refs/heads/<branch> exists.
func branchExists(ctx context.Context, root, branch string) (bool, error) {
	_, err := git(ctx, root, nil, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	switch {
	case err == nil:
		return true, nil
	case gitExitCode(err) == 1:
		return false, nil
	default:
		return false, err
	}
}

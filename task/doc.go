// Package task gives an agent orchestrator a per-task sandbox to wrap each task's harness in:
// a git worktree per task, an argv rewrite that runs the harness inside the sandbox, the URL a
// sandboxed process uses to reach a port on the host, a best-effort stop and an idempotent
// cleanup. It is the Go shape of the second seed (an npm "sandbox" library), offered as a
// library (the Sandbox interface) and on the command line (`autobox task ...`, see Main).
//
// Three kinds implement Sandbox:
//
//   - Worktree: a git worktree per task under the user's data directory, on branch
//     autobox/<id>. Wrap is the identity; the harness runs on the host.
//   - Native: the same worktree, and the harness runs under autobox's OS sandbox (package
//     jail on Linux): it may write its worktree and a scratch directory, and in the
//     repository's git directory only what a commit on its own branch needs.
//   - Docker: the same worktree, and the harness runs in `docker run -i --rm` with the
//     worktree mounted at its own path.
//
// Layout on disk, for a project whose canonical root is R:
//
//	<tasks dir>/<base(R)>-<8 hex of sha256(R)>/<id>            the worktree (branch autobox/<id>)
//	<tasks dir>/<base(R)>-<8 hex of sha256(R)>/.autobox/<id>/  private state: task.json, run.lock,
//	                                                          scratch/ (native HOME, TMPDIR)
//	<tasks dir>/<base(R)>-<8 hex of sha256(R)>/.autobox/.lock  serialises Workspace and Cleanup
//
// Task ids are checked by ValidateID before they touch a path, a git ref or a container name.
// Every git command runs with a controlled environment: GIT_* variables of the caller are
// dropped, and commands that look inside a task worktree pin GIT_DIR, GIT_COMMON_DIR and
// GIT_WORK_TREE to what autobox recorded when it created the worktree.
//
// A sandboxed harness (native or docker) can write the worktree's .git file, and a native
// one its admin directory, which is how git finds the configuration that says what to run
// (core.fsmonitor, hooks, the pager, aliases). Host git run in the worktree by a person
// must not run what the harness chose: while the harness runs, the link files are
// immutable where autobox can make them so; when it has ended, and whenever autobox hands
// the worktree out, they are restored to what git wrote, and git directories and unfinished
// operations the harness left are moved into the task's private state (see guard.go).
package task

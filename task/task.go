package task

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// Sandbox is the per-task shape an orchestrator wraps a harness in. Implementations are safe
// for concurrent use; operations on the same project and id are serialised across processes
// by a lock file.
//
// Wrap and Endpoint are pure (no I/O), so they take no context.
type Sandbox interface {
	// Workspace creates the task's workspace if it is missing and returns the directory the
	// harness runs in. It is idempotent and deterministic: the same project and id always give
	// the same path, and a second call reuses what the first made.
	Workspace(ctx context.Context, id string) (cwd string, err error)
	// Wrap rewrites a harness argv so that running it runs the harness inside the sandbox.
	// It has no side effects. Values of o.Env never appear in the result: the caller puts
	// them in the environment of the process it starts, and Wrap passes only their names.
	Wrap(argv []string, o WrapOptions) ([]string, error)
	// Endpoint is the URL a process inside the sandbox uses to reach port on the host.
	Endpoint(port int) (string, error)
	// Stop stops, best effort, everything the task runs that autobox knows of. Stopping a
	// task that runs nothing is not an error.
	Stop(ctx context.Context, id string) error
	// Cleanup tears the task down: it stops it, removes its worktree and private state, and
	// keeps its branch. It is idempotent. A dirty worktree is kept unless force is set; the
	// result then says Dirty and not Removed. A task that does not exist gives a zero result.
	Cleanup(ctx context.Context, id string, force bool) (CleanupResult, error)
}

// WrapOptions are the per-call inputs of Wrap. The zero value is valid.
type WrapOptions struct {
	// Cwd is the directory the harness starts in; "" means the task's worktree.
	Cwd string
	// Env lists variables for the harness as NAME=value or NAME. Only the names are used;
	// the values must be in the environment of the process that runs the wrapped argv.
	Env []string
	// ID is the task id.
	ID string
}

// CleanupResult is what Cleanup did. Its JSON field names are the seed's.
type CleanupResult struct {
	// Removed is true when this call removed the worktree.
	Removed bool `json:"removed"`
	// Dirty is true when the worktree had uncommitted files (counting untracked ones).
	Dirty bool `json:"dirty"`
	// Detail says why nothing was removed, or what was discarded, e.g. "3 uncommitted file(s)".
	Detail string `json:"detail,omitempty"`
}

// Kind names a Sandbox implementation on the command line and in task records.
type Kind string

// The kinds of Sandbox.
const (
	KindWorktree Kind = "worktree"
	KindNative   Kind = "native"
	KindDocker   Kind = "docker"
)

// Errors that callers branch on. They are wrapped with detail.
var (
	// ErrInvalidID: a task id outside the safe set (see ValidateID).
	ErrInvalidID = errors.New("invalid task id")
	// ErrNotRepository: the project is not inside a git working tree.
	ErrNotRepository = errors.New("not a git working tree")
	// ErrStranded: the task's path holds something autobox will not reuse or remove, such
	// as a worktree of another repository. It is reported, never deleted.
	ErrStranded = errors.New("stranded task worktree")
	// ErrUnsupported: the kind cannot run here (no OS sandbox, or a repository layout whose
	// git directory cannot be protected).
	ErrUnsupported = errors.New("unsupported")
	// ErrRunning: `autobox task run` already runs a harness for this task.
	ErrRunning = errors.New("task is already running")
	// ErrInvalid: an option or argument is malformed (port, env name, mount, path).
	ErrInvalid = errors.New("invalid argument")
	// ErrTampered: a sandbox changed the task's worktree in a way that host git would act
	// on, and autobox could not undo it. The worktree is not handed out.
	ErrTampered = errors.New("task worktree tampered with")
)

// MaxIDLength bounds task ids, which become path components, branch names and container names.
const MaxIDLength = 64

var idPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ValidateID accepts ids of 1 to MaxIDLength characters from [A-Za-z0-9._-] that start with
// a letter or digit, contain no "..", and do not end in "." or ".lock" (both are refused in
// git ref names). Such an id is a single path component and a valid git ref component.
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDLength:
		return fmt.Errorf("%w: %d characters, more than %d", ErrInvalidID, len(id), MaxIDLength)
	case !idPattern().MatchString(id):
		return fmt.Errorf("%w: %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", ErrInvalidID, id)
	case strings.Contains(id, ".."):
		return fmt.Errorf("%w: %q contains \"..\"", ErrInvalidID, id)
	case strings.HasSuffix(id, ".") || strings.HasSuffix(id, ".lock"):
		return fmt.Errorf("%w: %q ends in \".\" or \".lock\"", ErrInvalidID, id)
	}
	return nil
}

// Branch is the git branch of task id.
func Branch(id string) string { return "autobox/" + id }

var envNamePattern = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envNames returns the names of env (NAME=value or NAME entries) in order, without repeats.
func envNames(env ...[]string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, list := range env {
		for _, kv := range list {
			name, _, _ := strings.Cut(kv, "=")
			if !envNamePattern().MatchString(name) {
				return nil, fmt.Errorf("%w: environment variable name %q", ErrInvalid, name)
			}
			if !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names, nil
}

func checkPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("%w: port %d is not in 1-65535", ErrInvalid, port)
	}
	return nil
}

// withEnv is base with the NAME=value entries of extra set (bare names are skipped).
func withEnv(base, extra []string) []string {
	env := append([]string(nil), base...)
	for _, kv := range extra {
		if strings.Contains(kv, "=") {
			env = append(env, kv)
		}
	}
	return env
}

package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Options are what every kind shares. A nil *Options means the zero value.
type Options struct {
	// Project is a directory inside the git working tree the tasks branch from; "" means the
	// current directory. It is made absolute and canonical and replaced by the top level of
	// its working tree.
	Project string
	// TasksDir holds the task worktrees; "" means DefaultTasksDir(). It is created (0700)
	// if missing and made canonical.
	TasksDir string
	// Base is the commit-ish a new task branch starts from; "" means HEAD. An existing
	// branch autobox/<id> is reused as it is, whatever Base says.
	Base string
	// Log gets a line for each thing autobox restored or moved away in a task worktree
	// that a sandbox had changed (see secure); nil discards them.
	Log io.Writer
}

// Worktree is the worktree kind: a git worktree per task on branch autobox/<id>, with the
// harness running on the host. Native and Docker build on it.
type Worktree struct {
	repo     repo
	tasksDir string // canonical
	projDir  string // tasksDir/<slug>
	base     string
	kind     Kind // recorded in task.json by Workspace
	log      io.Writer
	// annotate, if set, adds what a kind records of its own to every record
	// saved (the docker kind's client and container).
	annotate func(*record)
}

var _ Sandbox = (*Worktree)(nil)

// NewWorktree resolves the project and the tasks directory.
func NewWorktree(opts *Options) (*Worktree, error) {
	return newWorktree(opts, KindWorktree)
}

func newWorktree(opts *Options, kind Kind) (*Worktree, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if strings.HasPrefix(o.Base, "-") {
		return nil, fmt.Errorf("%w: base ref %q starts with '-'", ErrInvalid, o.Base)
	}
	r, err := resolveRepo(context.Background(), o.Project)
	if err != nil {
		return nil, err
	}
	dir := o.TasksDir
	if dir == "" {
		if dir, err = DefaultTasksDir(); err != nil {
			return nil, err
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("tasks directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tasks directory: %w", err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("tasks directory: %w", err)
	}
	return &Worktree{repo: r, tasksDir: dir, projDir: filepath.Join(dir, projectSlug(r.root)), base: o.Base, kind: kind, log: o.Log}, nil
}

// Root is the canonical top level of the project's working tree.
func (w *Worktree) Root() string { return w.repo.root }

// Path is the worktree directory of task id (whether or not it exists).
func (w *Worktree) Path(id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	return filepath.Join(w.projDir, id), nil
}

// taskPaths are the files of one task. Only scratch is ever writable by a sandbox.
type taskPaths struct {
	worktree, state, record, runLock, scratch string
}

func (w *Worktree) paths(id string) taskPaths {
	state := filepath.Join(w.projDir, stateDirName, id)
	return taskPaths{
		worktree: filepath.Join(w.projDir, id),
		state:    state,
		record:   filepath.Join(state, "task.json"),
		runLock:  filepath.Join(state, "run.lock"),
		scratch:  filepath.Join(state, "scratch"),
	}
}

// withLock runs fn holding the project's lock, so that concurrent Workspace and Cleanup
// calls (from any process) for this project do not interleave their git commands.
func (w *Worktree) withLock(ctx context.Context, fn func() error) error {
	dir := filepath.Join(w.projDir, stateDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("task state: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, ".lock")) // no id starts with "."
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// Workspace creates the task's worktree on branch autobox/<id> if it is missing (from an
// existing branch, or a new one from Options.Base) and returns its path.
func (w *Worktree) Workspace(ctx context.Context, id string) (string, error) {
	rec, err := w.ensure(ctx, id)
	return rec.Path, err
}

// ensure is Workspace returning the task's record. An existing worktree is checked
// (secure) first: a tampered one is restored, or refused with ErrTampered.
func (w *Worktree) ensure(ctx context.Context, id string) (rec record, err error) {
	if err := ValidateID(id); err != nil {
		return rec, err
	}
	err = w.withLock(ctx, func() error {
		if err := w.prune(ctx); err != nil {
			return err
		}
		var st taskState
		rec, st, err = w.inspect(ctx, id)
		switch {
		case err != nil:
			return err
		case st == stateOK:
			before := rec
			rec.Kind = w.kind
			rec.Sandboxed = rec.Sandboxed || w.kind != KindWorktree
			if w.annotate != nil {
				w.annotate(&rec)
			}
			if err := w.secure(&rec); err != nil {
				return err
			}
			if rec != before {
				return w.save(rec)
			}
			return nil
		}
		rec, err = w.create(ctx, id)
		return err
	})
	return rec, err
}

// prune drops registrations of worktrees that are gone, once the link files it reads are
// the ones git wrote (restoreAllLinks).
func (w *Worktree) prune(ctx context.Context) error {
	if err := w.restoreAllLinks(); err != nil {
		return err
	}
	_, err := git(ctx, w.repo.root, nil, "worktree", "prune")
	return err
}

// expose records, before a sandbox gets the worktree of task id, that autobox must check
// it again (see secure), and returns the record.
func (w *Worktree) expose(ctx context.Context, id string) (rec record, err error) {
	err = w.withLock(ctx, func() error {
		if rec, err = readRecord(w.paths(id).record); err != nil {
			return fmt.Errorf("task %s: %w", id, err)
		}
		rec.Sandboxed, rec.Unchecked = true, true
		return w.save(rec)
	})
	return rec, err
}

// afterRun checks the worktree of task id once its sandboxed harness has ended, and says
// on Options.Log what it restored or moved away. It runs while `autobox task run` still
// holds the run lock, without the project lock: a Cleanup holding that lock waits for the
// run to end before it touches the worktree, and a Workspace meanwhile sees the run and
// only restores link files, as this does.
func (w *Worktree) afterRun(id string) {
	rec, err := readRecord(w.paths(id).record)
	if err == nil {
		before := rec
		if err = w.secure(&rec); err == nil && rec != before {
			err = w.save(rec)
		}
	}
	if err != nil {
		w.notef(id, "checking the worktree after the run: %v", err)
	}
}

func (w *Worktree) create(ctx context.Context, id string) (record, error) {
	p := w.paths(id)
	branch := Branch(id)
	// An empty directory is what a crash between mkdir and checkout leaves; git refuses a
	// non-empty one, and inspect has already reported anything else as stranded.
	if err := os.Remove(p.worktree); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return record{}, fmt.Errorf("task %s: %w", id, err)
	}
	have, err := branchExists(ctx, w.repo.root, branch)
	if err != nil {
		return record{}, err
	}
	args := []string{"worktree", "add", "--quiet", "--", p.worktree, branch}
	if !have {
		base := w.base
		if base == "" {
			base = "HEAD"
		}
		args = []string{"worktree", "add", "--quiet", "-b", branch, "--", p.worktree, base}
	}
	if _, err := git(ctx, w.repo.root, nil, args...); err != nil {
		return record{}, fmt.Errorf("task %s: %w", id, err)
	}
	// Asked now, before any harness could rewrite the worktree's .git file.
	admin, err := git(ctx, p.worktree, nil, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return record{}, fmt.Errorf("task %s: %w", id, err)
	}
	if admin, err = filepath.EvalSymlinks(admin); err != nil {
		return record{}, fmt.Errorf("task %s: %w", id, err)
	}
	if !w.isAdminDir(admin) {
		return record{}, fmt.Errorf("task %s: git put its admin directory at %s, outside %s/worktrees", id, admin, w.repo.common)
	}
	l, err := readLinks(p.worktree, admin)
	if err != nil {
		return record{}, fmt.Errorf("task %s: %w", id, err)
	}
	rec := record{ID: id, Kind: w.kind, Root: w.repo.root, Path: p.worktree, Branch: branch, Admin: admin,
		Links: l, Sandboxed: w.kind != KindWorktree}
	return rec, w.save(rec)
}

func (w *Worktree) save(rec record) error {
	if w.annotate != nil {
		w.annotate(&rec)
	}
	p := w.paths(rec.ID)
	if err := os.MkdirAll(p.state, 0o700); err != nil {
		return fmt.Errorf("task state: %w", err)
	}
	return writeJSON(p.record, rec)
}

// isAdminDir reports whether dir is <common>/worktrees/<one name>.
func (w *Worktree) isAdminDir(dir string) bool {
	parent, name := filepath.Split(dir)
	return filepath.Clean(parent) == filepath.Join(w.repo.common, "worktrees") && name != "" && name != "." && name != ".."
}

type taskState int

const (
	stateMissing taskState = iota // no worktree directory (or an empty one)
	stateOK                       // a worktree of this repository, at its admin dir rec.Admin
)

// inspect finds what is at the task's path. A worktree of this repository gives stateOK and
// its record (adopted and saved if autobox had none). Anything else non-empty is ErrStranded.
func (w *Worktree) inspect(ctx context.Context, id string) (record, taskState, error) {
	p := w.paths(id)
	rec, err := readRecord(p.record)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return rec, stateMissing, err
	}
	fi, err := os.Lstat(p.worktree)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rec, stateMissing, nil
	case err != nil:
		return rec, stateMissing, fmt.Errorf("task %s: %w", id, err)
	case fi.IsDir() && isEmptyDir(p.worktree):
		return rec, stateMissing, nil
	}
	dotgit := filepath.Join(p.worktree, ".git")
	// With a record, the worktree's own .git is not needed: a harness may have removed
	// it, and secure puts it back.
	if fi.IsDir() && rec.Path == p.worktree && w.isAdminDir(rec.Admin) && isDir(rec.Admin) {
		return rec, stateOK, nil
	}
	// No usable record: look for the registration git keeps for this path.
	admin, err := w.adminFor(dotgit)
	if err != nil {
		return rec, stateMissing, err
	}
	if admin == "" {
		return rec, stateMissing, w.stranded(id, p.worktree)
	}
	// Nobody knows what ran in it: it is checked as if a sandbox had had it.
	rec = record{ID: id, Kind: w.kind, Root: w.repo.root, Path: p.worktree, Branch: Branch(id), Admin: admin,
		Sandboxed: true, Unchecked: true}
	rec.Links = canonicalLinks(rec)
	return rec, stateOK, w.save(rec)
}

// adminFor finds the admin directory whose gitdir file names dotgit. Two claimants are an
// error: an admin directory is writable by a native sandbox, so its claim is not proof.
func (w *Worktree) adminFor(dotgit string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(w.repo.common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("listing worktrees: %w", err)
	}
	found := ""
	for _, e := range entries {
		admin := filepath.Join(w.repo.common, "worktrees", e.Name())
		data, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil || filepath.Clean(strings.TrimSpace(string(data))) != dotgit {
			continue
		}
		if found != "" {
			return "", fmt.Errorf("%w: %s and %s both claim %s", ErrStranded, found, admin, dotgit)
		}
		found = admin
	}
	return found, nil
}

// stranded describes what occupies a task path that is not a worktree of this repository.
func (w *Worktree) stranded(id, path string) error {
	data, err := os.ReadFile(filepath.Join(path, ".git"))
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	switch {
	case err != nil || !ok:
		return fmt.Errorf("%w: task %s: %s exists and is not a git worktree; move it away", ErrStranded, id, path)
	case w.isAdminDir(filepath.Clean(strings.TrimSpace(gitdir))):
		return fmt.Errorf("%w: task %s: %s points at %s, which git no longer lists for it; run `git worktree repair %s` in %s",
			ErrStranded, id, path, strings.TrimSpace(gitdir), path, w.repo.root)
	}
	return fmt.Errorf("%w: task %s: %s is a worktree of another repository (%s), not of %s",
		ErrStranded, id, path, strings.TrimSpace(gitdir), w.repo.root)
}

func fileExists(path string) bool {
	ok, _ := exists(path)
	return ok
}

// Wrap is the identity: the harness runs on the host, in the worktree the caller chose.
func (w *Worktree) Wrap(argv []string, o WrapOptions) ([]string, error) {
	if err := checkWrap(argv, o); err != nil {
		return nil, err
	}
	return append([]string(nil), argv...), nil
}

func checkWrap(argv []string, o WrapOptions) error {
	if err := ValidateID(o.ID); err != nil {
		return err
	}
	if len(argv) == 0 {
		return fmt.Errorf("%w: empty argv", ErrInvalid)
	}
	if o.Cwd != "" && !filepath.IsAbs(o.Cwd) {
		return fmt.Errorf("%w: cwd %q is not absolute", ErrInvalid, o.Cwd)
	}
	_, err := envNames(o.Env)
	return err
}

// Endpoint is on the host's loopback interface.
func (w *Worktree) Endpoint(port int) (string, error) {
	if err := checkPort(port); err != nil {
		return "", err
	}
	return "http://127.0.0.1:" + strconv.Itoa(port), nil
}

// Stop stops a harness started by `autobox task run` for this task. A harness the caller
// started itself from Wrap's argv (the identity) is the caller's to stop.
func (w *Worktree) Stop(ctx context.Context, id string) error {
	if err := ValidateID(id); err != nil {
		return err
	}
	return w.stopRun(ctx, id)
}

// Cleanup stops the task, then removes its worktree and private state; the branch stays.
// A dirty worktree unforced keeps everything, a running harness included.
func (w *Worktree) Cleanup(ctx context.Context, id string, force bool) (CleanupResult, error) {
	return w.remove(ctx, id, force, func() error { return w.stopRun(ctx, id) })
}

// remove is Cleanup with the kind's stop, which runs once removal is decided (or when the
// worktree is already gone, for strays). The worktree is removed by autobox rather than
// `git worktree remove`, which finds it through gitdir files that a native sandbox can
// rewrite.
func (w *Worktree) remove(ctx context.Context, id string, force bool, stop func() error) (res CleanupResult, err error) {
	if err := ValidateID(id); err != nil {
		return res, err
	}
	p := w.paths(id)
	err = w.withLock(ctx, func() error {
		if err := w.prune(ctx); err != nil {
			return err
		}
		rec, st, err := w.inspect(ctx, id)
		if err != nil {
			return err
		}
		if st == stateMissing {
			if err := stop(); err != nil {
				return err
			}
			return removeAll(p.worktree, p.state)
		}
		// What is kept must be safe for host git, and the status below must not read a
		// configuration the harness wrote.
		before := rec
		if err := w.secure(&rec); err != nil {
			return err
		}
		if rec != before {
			if err := w.save(rec); err != nil {
				return err
			}
		}
		n, err := dirtyCount(ctx, w.repo.common, rec.Admin, p.worktree)
		if err != nil {
			return err
		}
		res.Dirty = n > 0
		if n > 0 && !force {
			res.Detail = dirtyDetail(n)
			return nil
		}
		if err := stop(); err != nil {
			return err
		}
		// A run killed by stop may have left its pins.
		if err := unpin(rec); err != nil {
			return err
		}
		if err := removeAll(p.worktree, rec.Admin); err != nil {
			return err
		}
		if _, err := git(ctx, w.repo.root, nil, "worktree", "prune"); err != nil {
			return err
		}
		res.Removed = true
		res.Detail = "kept branch " + rec.Branch
		if n > 0 {
			res.Detail = "discarded " + dirtyDetail(n) + "; kept branch " + rec.Branch
		}
		return removeAll(p.state)
	})
	return res, err
}

func removeAll(paths ...string) error {
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	return nil
}

// run, holding the task's run lock, makes the workspace and runs argv on the host with
// this process's environment plus o.Env's values.
func (w *Worktree) run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error) {
	return w.runTracked(ctx, id, argv, o, func() (proc, error) {
		cwd, err := w.Workspace(ctx, id)
		if err != nil {
			return nil, err
		}
		if o.Cwd != "" {
			cwd = o.Cwd
		}
		return startHost(argv, cwd, withEnv(os.Environ(), o.Env), s)
	})
}

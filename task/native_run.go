package task

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/autobox-dev/autobox/jail"
)

// run, holding the task's run lock, makes the workspace and runs argv in the sandbox.
// The worktree's link files are pinned while the harness runs, and the worktree is checked
// once it has ended (see secure), however it ended.
func (n *Native) run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error) {
	return n.runTracked(ctx, id, argv, o, func() (proc, error) {
		if _, err := n.ensure(ctx, id); err != nil {
			return nil, err
		}
		return n.Worktree.guard(ctx, id, func(rec record) (proc, error) { return n.start(ctx, rec, argv, o, s) })
	})
}

// start launches argv through `autobox worker exec` (jail.Start), which restricts itself
// and then runs the harness; jail fails closed where the sandbox cannot be enforced.
func (n *Native) start(ctx context.Context, rec record, argv []string, o WrapOptions, s stdio) (proc, error) {
	pol, err := n.sandboxPolicy(rec)
	if err != nil {
		return nil, err
	}
	env, err := n.harnessEnv(ctx, rec.ID, o.Env)
	if err != nil {
		return nil, err
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = rec.Path
	}
	jp := &jailProc{}
	stdout, err := jp.file(s.out)
	if err != nil {
		return nil, err
	}
	stderr, err := jp.file(s.err)
	if err != nil {
		jp.closeWriters()
		return nil, err
	}
	spec := &jail.Spec{Argv: argv, Dir: cwd, Env: env, Sandbox: *pol}
	jp.tree, err = jail.Start(n.exe, spec, stdout, stderr)
	jp.closeWriters() // the launcher has its copies; the copiers end when the tree exits
	if err != nil {
		jp.copies.Wait()
		if errors.Is(err, jail.ErrUnsupported) {
			return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("starting task %s in its sandbox: %w", rec.ID, err)
	}
	return jp, nil
}

// jailProc is a harness tree started by jail. Writers that are not files get a pipe and a
// copier, since the launcher hands the command real file descriptors.
type jailProc struct {
	tree    *jail.Tree
	writers []*os.File // our copies of pipe write ends, closed once the launcher has started
	copies  sync.WaitGroup
	mu      sync.Mutex // serialises the copiers: stdout and stderr may be one writer
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (j *jailProc) file(w io.Writer) (*os.File, error) {
	if w == nil {
		w = io.Discard
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	j.writers = append(j.writers, pw)
	j.copies.Add(1)
	go func() {
		defer j.copies.Done()
		defer r.Close()
		io.Copy(lockedWriter{&j.mu, w}, r)
	}()
	return pw, nil
}

func (j *jailProc) closeWriters() {
	for _, w := range j.writers {
		w.Close()
	}
	j.writers = nil
}

func (j *jailProc) wait() (int, error) {
	res, err := j.tree.Wait()
	j.copies.Wait()
	switch {
	case err != nil:
		return -1, fmt.Errorf("harness: %w", err)
	case !res.Started:
		return -1, fmt.Errorf("starting harness: %s", res.SpawnError)
	case res.Signal != "":
		return signalCode(res.Signal), nil
	}
	return res.ExitCode, nil
}

func (j *jailProc) kill() { j.tree.Kill() }

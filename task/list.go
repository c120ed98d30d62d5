package task

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Info describes one task of a project.
type Info struct {
	ID string `json:"id"`
	// Kind is what the last Workspace call recorded; "" when autobox has no record.
	Kind Kind   `json:"kind"`
	Path string `json:"path"`
	// Branch is what the worktree has checked out: autobox/<id> unless someone switched;
	// "" when HEAD is detached or the task is stranded.
	Branch string `json:"branch"`
	Dirty  bool   `json:"dirty"`
	// Detail counts uncommitted files, or says why the task is stranded, or what a
	// sandbox changed that autobox has not checked yet.
	Detail   string `json:"detail,omitempty"`
	Stranded bool   `json:"stranded,omitempty"`
	// Unchecked is true when a sandbox may have changed the worktree since autobox last
	// checked it: Workspace checks it (and restores or moves away what it must) before
	// host git should run in it.
	Unchecked bool `json:"unchecked,omitempty"`
	// Running is true while an `autobox task run` runs a harness for the task.
	Running bool `json:"running"`
}

// List describes the project's tasks that have a directory, in id order. It changes nothing
// but a missing task record, which it writes for a worktree git knows; in particular it
// does not check worktrees (see Info.Unchecked), and it runs no git command in a worktree
// whose link files a sandbox changed.
func (w *Worktree) List(ctx context.Context) ([]Info, error) {
	var ids []string
	entries, err := os.ReadDir(w.projDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() && ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	var out []Info
	for _, id := range ids {
		p := w.paths(id)
		info := Info{ID: id, Path: p.worktree, Running: runHolder(p.runLock) != 0}
		rec, st, err := w.inspect(ctx, id)
		info.Kind = rec.Kind
		switch {
		case errors.Is(err, ErrStranded):
			info.Stranded, info.Detail = true, err.Error()
		case err != nil:
			return nil, err
		case st == stateMissing:
			continue
		case rec.Sandboxed && len(changedLinks(rec)) > 0:
			info.Unchecked = true
			info.Detail = "changed by a sandbox: " + strings.Join(changedLinks(rec), ", ")
		default:
			env := pinned(w.repo.common, rec.Admin, p.worktree)
			info.Branch, _ = git(ctx, p.worktree, env, "symbolic-ref", "--short", "-q", "HEAD")
			n, err := dirtyCount(ctx, w.repo.common, rec.Admin, p.worktree)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				info.Dirty, info.Detail = true, dirtyDetail(n)
			}
			if rec.Sandboxed && rec.Unchecked && !info.Running {
				info.Unchecked = true
				info.Detail = strings.TrimPrefix(info.Detail+"; not checked since a sandbox had it", "; ")
			}
		}
		out = append(out, info)
	}
	return out, nil
}

func dirtyDetail(n int) string { return strconv.Itoa(n) + " uncommitted file(s)" }

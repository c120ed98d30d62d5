package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Resolving conflicts without discarding the workspace. A conflict is a path both
// sides changed since the baseline. Two ways out, each for named paths:
//
//   - resolve: the workspace has taken in the host's version (by hand); the host's
//     current version becomes the path's baseline, so the host has no change there
//     any more and sync applies the workspace's version.
//   - merge: a three-way merge of text files (baseline, workspace, host; textdiff.go),
//     written into the workspace. Where it applies cleanly the path is then resolved;
//     where both changed the same lines, the workspace's file gets conflict markers
//     to edit, and resolve follows.
//
// Only the private baseline and the working tree change; the host is read, never
// written. Both hold the workspace's own lock, as sync does.

// ResolveResult is the resolve and merge response.
type ResolveResult struct {
	OK          bool     `json:"ok"`
	WorkspaceID string   `json:"workspaceId"`
	Resolved    []string `json:"resolved"` // the host's version is now their baseline
	// merge: Merged paths now hold both sides' edits (and are resolved);
	// Conflicted ones hold conflict markers and are not resolved.
	Merged     []string        `json:"merged,omitempty"`
	Conflicted []MergeConflict `json:"conflicted,omitempty"`
	Next       string          `json:"next"` // what to do now
}

// MergeConflict is a file merge wrote with conflict markers, and where they start.
type MergeConflict struct {
	Path  string `json:"path"`
	Lines []int  `json:"lines"`
}

// Resolve takes the host's current version of each path as its baseline. Each must
// be a conflict of a path both sides changed; a text file still holding merge's
// conflict markers is refused. Nothing is changed unless every path qualifies.
func (s *Store) Resolve(ctx context.Context, id string, paths []string) (*ResolveResult, error) {
	r, done, err := s.beginResolve(ctx, id, "resolve", paths)
	if err != nil {
		return nil, err
	}
	defer done()
	for i, p := range r.paths {
		if w, ok := r.pl.work.get(p); ok && w.typ == unix.S_IFREG && w.size <= DiffFileMax {
			if data, why := readForDiff(r.o.work, p, w); why == "" && isText(data) {
				if n := markerLine(data); n > 0 {
					return nil, invalidf("paths[%d] %q still has a conflict marker at line %d: edit the file in the workspace to the text you want, then resolve", i, p, n)
				}
			}
		}
	}
	entries := make([]journalEntry, len(r.paths))
	for i, p := range r.paths {
		entries[i] = journalEntry{Path: p, Rebase: true}
	}
	if err := r.record("resolve", entries, nil); err != nil {
		return nil, err
	}
	return &ResolveResult{OK: true, WorkspaceID: id, Resolved: r.paths, Next: resolvedNext}, nil
}

const resolvedNext = "The host's current version is now the baseline of the resolved paths, so sync applies the workspace's version of them. Review with status (diff: true), then sync."

// Merge merges, for each path, the host's changes and the workspace's into the
// workspace's file (text files only, at most DiffFileMax each side).
func (s *Store) Merge(ctx context.Context, id string, paths []string) (*ResolveResult, error) {
	r, done, err := s.beginResolve(ctx, id, "merge", paths)
	if err != nil {
		return nil, err
	}
	defer done()
	type input struct{ base, work, host []byte }
	in := make([]input, len(r.paths))
	for i, p := range r.paths {
		var why string
		in[i].base, why = r.readText(r.o.base, p, r.pl.base.get, "baseline")
		if why == "" {
			in[i].work, why = r.readText(r.o.work, p, r.pl.work.get, "workspace")
		}
		if why == "" {
			in[i].host, why = r.readText(r.o.src, p, r.pl.hostAt, "host")
		}
		if why != "" {
			js, _ := json.Marshal([]string{p})
			return nil, invalidf("paths[%d] %q: merge needs a text file on each side (baseline, workspace, host), at most %d MB: %s. "+
				"Bring the host's version into the workspace yourself, then action \"resolve\" with paths %s", i, p, DiffFileMax>>20, why, js)
		}
	}
	res := &ResolveResult{OK: true, WorkspaceID: id, Resolved: []string{}, Merged: []string{}}
	var clean []string
	entries := make([]journalEntry, len(r.paths))
	merged := make([][]byte, len(r.paths))
	for i, p := range r.paths {
		out, conflicts := merge3(splitLines(in[i].base), splitLines(in[i].work), splitLines(in[i].host))
		entries[i] = journalEntry{Path: p, Rebase: len(conflicts) == 0}
		if string(out) != string(in[i].work) {
			merged[i] = out
		}
		if len(conflicts) > 0 {
			res.Conflicted = append(res.Conflicted, MergeConflict{Path: p, Lines: conflicts})
			continue
		}
		clean = append(clean, p)
	}
	if err := r.record("merge", entries, merged); err != nil {
		return nil, err
	}
	res.Merged, res.Resolved = append(res.Merged, clean...), append(res.Resolved, clean...)
	res.Next = "The merged paths hold both sides' edits, and the host's version is now their baseline. Review with status (diff: true), then sync."
	if len(res.Conflicted) > 0 {
		res.OK = false
		var names []string
		for _, c := range res.Conflicted {
			names = append(names, c.Path)
		}
		js, _ := json.Marshal(names)
		res.Next = fmt.Sprintf("Both sides changed the same lines in %s: each such place in the workspace's file now holds the workspace's lines, the baseline's and the host's, between "+
			"%q, %q, %q and %q lines. Edit them to the text you want, then copy_then_sync action \"resolve\" with paths %s, then sync.",
			strings.Join(names, ", "), strings.TrimSpace(markOurs), strings.TrimSpace(markBase), strings.TrimSpace(markSep), strings.TrimSpace(markTheirs), js)
		if len(clean) > 0 {
			res.Next += " The other paths merged cleanly and are resolved."
		}
	}
	return res, nil
}

// resolving is a resolve or merge under way: the workspace's plan, and the paths.
type resolving struct {
	o     *opened
	pl    *plan
	paths []string
}

// beginResolve takes the workspace for action and checks that each path is a
// conflict of a path both sides changed.
func (s *Store) beginResolve(ctx context.Context, id, action string, paths []string) (*resolving, func(), error) {
	if paths == nil {
		return nil, nil, invalidf("%s needs paths: the conflicted paths to %s (status lists the conflicts)", action, action)
	}
	o, pl, done, err := s.beginPlanned(ctx, id, action, true)
	if err != nil {
		return nil, nil, err
	}
	clean, err := cleanPaths("paths", o.rec.SandboxPath, paths)
	if err == nil {
		err = pl.bothChanged(clean)
	}
	if err != nil {
		done()
		return nil, nil, err
	}
	return &resolving{o: o, pl: pl, paths: clean}, done, nil
}

// bothChanged checks that each path is one both sides changed since the baseline,
// with no directory on the baseline's or the host's side.
func (pl *plan) bothChanged(paths []string) error {
	for i, p := range paths {
		_, ws := pl.ws[p]
		_, hs := pl.hs[p]
		if !ws || !hs {
			why := "it is not in conflict"
			for _, c := range pl.conflicts {
				if c.Path == p {
					why = "its conflict is not one of a path both sides changed (" + c.Reason + ")"
				}
			}
			return invalidf("paths[%d] %q: %s; resolve and merge take paths that both the workspace and the host changed (status lists the conflicts)", i, p, why)
		}
		var removed string
		ancestors(p, func(a string) bool {
			if act := pl.hs[a]; act == ActionDelete || act == ActionReplace {
				removed = a
			}
			return removed != ""
		})
		if removed != "" {
			return invalidf("paths[%d] %q: the host removed directory %s above it since the baseline; make that directory again on the host, or drop the workspace's change", i, p, removed)
		}
		b, bok := pl.base.get(p)
		h, hok := pl.hostAt(p)
		if bok && b.isDir() || hok && h.isDir() {
			return invalidf("paths[%d] %q is a directory on the baseline's or the host's side: resolve and merge take files and symbolic links; name the files inside it", i, p)
		}
	}
	return nil
}

// readText reads p beneath r (which side names) as the plan saw it (get), for
// merge; why says why it cannot be merged.
func (r *resolving) readText(rt *root, p string, get func(string) (entry, bool), side string) ([]byte, string) {
	e, ok := get(p)
	switch {
	case !ok:
		return nil, "the " + side + " has no file there"
	case e.typ != unix.S_IFREG:
		return nil, "the " + side + " has a " + typeName(e.typ) + " there"
	}
	data, why := readForDiff(rt, p, e)
	if why == "" && !isText(data) {
		why = "binary content"
	}
	if why != "" {
		return nil, "the " + side + "'s file: " + why
	}
	return data, ""
}

// record does a resolve or merge (action) through a journal (journal.go):
// entries say per path whether the host's version becomes its baseline, and
// merged[i] (nil: none, or no merged files at all) is the working tree's new
// content of entries[i]. An error before the commit changed nothing; one after
// it names the paths done, every other path being as it was.
func (r *resolving) record(action string, entries []journalEntry, merged [][]byte) error {
	st, err := newStage(r.o.dir, "journal-")
	if err != nil {
		return unchanged(action, inUserWords(r.o.dir, "", "creating a journal directory in %s", err))
	}
	committed := false
	defer func() {
		unix.Close(st.fd)
		if !committed {
			removeAllAt(st.parent, st.name)
		}
	}()
	for i := range entries {
		e := &entries[i]
		if i < len(merged) && merged[i] != nil {
			w, _ := r.pl.work.get(e.Path)
			if e.Work, err = r.stageWork(action, st, e.Path, w, merged[i]); err != nil {
				return unchanged(action, err)
			}
		}
		if e.Rebase {
			if err := r.stageBase(action, st, e); err != nil {
				return unchanged(action, err)
			}
		}
	}
	// The baseline changes from here: its manifest no longer describes it.
	if err := dropManifest(r.o.dir); err != nil {
		return unchanged(action, fmt.Errorf("invalidating the baseline manifest: %w", err))
	}
	if err := commitJournal(st, &journalFile{Action: action, Entries: entries}); err != nil {
		return unchanged(action, fmt.Errorf("writing the journal in %s: %w", r.o.dir.path, orSpace(r.o.dir, err)))
	}
	committed = true
	a := &applier{o: r.o, pl: r.pl}
	b := &baseApplier{a: a, jfd: st.fd}
	var touched []op
	var done []string
	for i := range entries {
		e := &entries[i]
		if err := r.applyOne(action, st, b, e); err != nil {
			// The next operation finishes what can be (journal.go).
			return fmt.Errorf("%s stopped at %s: %w. Done: %s; every other path is as it was before the %s (the next operation finishes this one where it can)",
				action, e.Path, err, listOrNone(done), action)
		}
		for _, d := range e.Dirs {
			touched = append(touched, op{path: d.Path})
		}
		if e.Rebase {
			touched = append(touched, op{path: e.Path})
		}
		done = append(done, e.Path)
	}
	if err := step(action + " done"); err == nil {
		removeAllAt(st.parent, st.name)
	}
	a.updateManifest(touched)
	return nil
}

// unchanged says that action stopped before it changed anything.
func unchanged(action string, err error) error {
	return fmt.Errorf("%w; the %s changed nothing", err, action)
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	js, _ := json.Marshal(l)
	return string(js)
}

// applyOne puts e's merged file in the working tree (if it is still as the plan
// saw it), then its baseline.
func (r *resolving) applyOne(action string, st *stageDir, b *baseApplier, e *journalEntry) error {
	if e.Work != "" {
		w, _ := r.pl.work.get(e.Path)
		pfd, name, err := r.o.work.parent(e.Path)
		if err != nil {
			return workChanged(e.Path)
		}
		defer unix.Close(pfd)
		if cur, ok, err := lstatAt(pfd, name); err != nil || !ok || !sameMeta(cur, w) {
			return workChanged(e.Path)
		}
		if err := step(action + " work " + e.Path); err != nil {
			return inUserWords(r.o.work, e.Path, "writing the merge of %s", err)
		}
		if err := unix.Renameat(st.fd, e.Work, pfd, name); err != nil {
			return inUserWords(r.o.work, e.Path, "writing the merge of %s", err)
		}
	}
	if !e.Rebase {
		return nil
	}
	return b.rebase(action, e)
}

// stageWork writes data, the merge of working-tree file p (as planned: w), into
// the journal directory, with w's permissions.
func (r *resolving) stageWork(action string, st *stageDir, p string, w entry, data []byte) (string, error) {
	name := st.next()
	if err := step(action + " stage " + p); err != nil {
		return "", fmt.Errorf("writing the merge of %s into the workspace storage: %w", p, orSpace(r.o.dir, err))
	}
	fd, err := createAt(st.fd, name, w.perm)
	if err != nil {
		return "", fmt.Errorf("writing the merge of %s into the workspace storage: %w", p, orSpace(r.o.dir, err))
	}
	f := os.NewFile(uintptr(fd), name)
	// As root, the merged file keeps the owner of the one it replaces (see owner.go).
	if os.Geteuid() == 0 {
		err = keepOwner(r.o.work, p, fd)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Chmod(os.FileMode(w.perm))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing the merge of %s into the workspace storage: %w", p, orSpace(r.o.dir, err))
	}
	return name, nil
}

// keepOwner gives the file open at fd the owner of working-tree file p.
func keepOwner(work *root, p string, fd int) error {
	pfd, name, err := work.parent(p)
	if err != nil {
		return workChanged(p)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return workChanged(p)
	}
	return unix.Fchown(fd, int(st.Uid), int(st.Gid))
}

// stageBase stages the host's current version of e.Path (as planned) for its
// baseline, and lists the baseline directories above it to make.
func (r *resolving) stageBase(action string, st *stageDir, e *journalEntry) error {
	var dirs []string
	ancestors(e.Path, func(d string) bool {
		if _, ok := r.pl.base.get(d); ok {
			return true
		}
		dirs = append([]string{d}, dirs...)
		return false
	})
	for _, d := range dirs {
		h, ok := r.pl.hostAt(d)
		if !ok || !h.isDir() {
			return hostChanged(d, "it is no longer a directory")
		}
		e.Dirs = append(e.Dirs, journalDir{Path: d, Perm: h.perm})
	}
	if err := step(action + " stage base " + e.Path); err != nil {
		return fmt.Errorf("copying the host's version of %s into the workspace storage: %w", e.Path, orSpace(r.o.dir, err))
	}
	h, ok := r.pl.hostAt(e.Path)
	switch {
	case !ok:
		e.Remove = true
		return nil
	case h.typ == unix.S_IFLNK:
		e.Base = st.next()
		if err := unix.Symlinkat(h.link, st.fd, e.Base); err != nil {
			return fmt.Errorf("copying the host's version of %s into the workspace storage: %w", e.Path, orSpace(r.o.dir, err))
		}
		return nil
	case h.typ != unix.S_IFREG:
		return fmt.Errorf("%s: cannot take the host's %s as the baseline", e.Path, typeName(h.typ))
	}
	f, err := r.o.src.openFile(e.Path)
	if err != nil {
		return hostChanged(e.Path, err.Error())
	}
	defer f.Close()
	var before, after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &before); err != nil || !sameMeta(entryOf(&before), h) {
		return hostChanged(e.Path, "it was modified")
	}
	e.Base = st.next()
	pf, err := placeFile(int(f.Fd()), &before, st.fd, e.Base, h.perm, true, &st.memo)
	if err == nil {
		err = pf.finish(h.perm, h.mtime, nil)
	}
	if err != nil {
		return fmt.Errorf("copying the host's version of %s into the workspace storage: %w", e.Path, orSpace(r.o.dir, err))
	}
	if err := unix.Fstat(int(f.Fd()), &after); err != nil || !sameVersion(&before, &after) {
		return hostChanged(e.Path, "it was modified while it was read")
	}
	return nil
}

// bothChangedReason is the reason of a conflict of a path both sides changed: what
// it is, and the ways out, in the tool's parameters.
func bothChangedReason(p string) string {
	js, _ := json.Marshal([]string{p})
	return fmt.Sprintf("changed in both the workspace and the host since the baseline. To keep both: copy_then_sync action \"merge\" with paths %s "+
		"(a three-way merge of text files); or bring the host's version into the workspace yourself, then action \"resolve\" with paths %s "+
		"(the host's current version becomes the baseline, so sync applies the workspace's). Other changes can sync meanwhile: action \"sync\" with paths", js, js)
}

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	if err := r.rebase(r.paths); err != nil {
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
	for i, p := range r.paths {
		out, conflicts := merge3(splitLines(in[i].base), splitLines(in[i].work), splitLines(in[i].host))
		if string(out) != string(in[i].work) {
			w, _ := r.pl.work.get(p)
			if err := writeWork(r.o.work, p, w, out); err != nil {
				return nil, err
			}
		}
		if len(conflicts) > 0 {
			res.Conflicted = append(res.Conflicted, MergeConflict{Path: p, Lines: conflicts})
			continue
		}
		clean = append(clean, p)
	}
	if err := r.rebase(clean); err != nil {
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
	o, pl, done, err := s.beginPlanned(ctx, id, action)
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

// rebase makes the host's current version (as planned) the baseline of each path,
// with any directories above it the baseline lacks.
func (r *resolving) rebase(paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	a := &applier{o: r.o, pl: r.pl}
	var err error
	if a.baseStage, err = newStage(r.o.dir, "stage-"); err != nil {
		return inUserWords(r.o.dir, "", "creating a staging directory in %s", err)
	}
	defer a.baseStage.remove()
	if err := dropManifest(r.o.dir); err != nil {
		return fmt.Errorf("invalidating the baseline manifest: %w", err)
	}
	var touched []op
	for _, p := range paths {
		var dirs []string
		ancestors(p, func(d string) bool {
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
			if err := a.putBaseline(d, h, nil); err != nil {
				return err
			}
			r.pl.base.set(d, h)
			touched = append(touched, op{path: d})
		}
		if err := r.rebaseOne(a, p); err != nil {
			return err
		}
		touched = append(touched, op{path: p})
	}
	a.updateManifest(touched)
	return nil
}

// rebaseOne puts the host's p, as planned, in the baseline.
func (r *resolving) rebaseOne(a *applier, p string) error {
	h, ok := r.pl.hostAt(p)
	if !ok {
		return a.inBaseline(p, func(pfd int, name string) error { return removeAllAt(pfd, name) })
	}
	if h.typ != unix.S_IFREG {
		return a.putBaseline(p, h, nil)
	}
	f, err := r.o.src.openFile(p)
	if err != nil {
		return hostChanged(p, err.Error())
	}
	defer f.Close()
	var st, after unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || !sameMeta(entryOf(&st), h) {
		return hostChanged(p, "it was modified")
	}
	tmp := a.baseStage.next()
	pf, err := placeFile(int(f.Fd()), &st, a.baseStage.fd, tmp, h.perm, true, &a.baseStage.memo)
	if err == nil {
		err = pf.finish(h.perm, h.mtime, nil)
	}
	if err != nil {
		return inUserWords(r.o.base, p, "updating baseline %s", err)
	}
	if err := unix.Fstat(int(f.Fd()), &after); err != nil || !sameVersion(&st, &after) {
		return hostChanged(p, "it was modified while it was read")
	}
	return a.putBaseline(p, h, &stagedFile{baseTmp: tmp})
}

// writeWork replaces working-tree file p (as planned: w) with data: written to a
// new file beside it and renamed over it, never through a link.
func writeWork(work *root, p string, w entry, data []byte) error {
	pfd, name, err := work.parent(p)
	if err != nil {
		return workChanged(p)
	}
	defer unix.Close(pfd)
	if cur, ok, err := lstatAt(pfd, name); err != nil || !ok || !sameMeta(cur, w) {
		return workChanged(p)
	}
	var b [8]byte
	rand.Read(b[:])
	tmp := ".autobox-merge-" + hex.EncodeToString(b[:])
	fd, err := createAt(pfd, tmp, w.perm)
	if err != nil {
		return fmt.Errorf("writing the merge of %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	// As root, the merged file keeps the owner of the one it replaces (see owner.go).
	var st unix.Stat_t
	if os.Geteuid() == 0 {
		if err = unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
			err = unix.Fchown(fd, int(st.Uid), int(st.Gid))
		}
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
	if err == nil {
		err = unix.Renameat(pfd, tmp, pfd, name)
	}
	if err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return fmt.Errorf("writing the merge of %s: %w", p, err)
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

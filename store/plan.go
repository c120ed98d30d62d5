package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

// Change is one entry of a change list. Removing a directory is one change; the entries
// beneath it are not listed.
type Change struct {
	Path   string `json:"path"`
	Action Action `json:"action"`
	// A new directory with more than collapseMin entries beneath it is one change:
	// Files counts the files (and links) beneath it, Bytes their size, First names
	// its first entries (see collapse).
	Files int      `json:"files,omitempty"`
	Bytes int64    `json:"bytes,omitempty"`
	First []string `json:"first,omitempty"`
}

// Conflict is a path that blocks sync: changed on both sides since the baseline, or a
// workspace change the filesystem rules forbid (Host is then empty).
type Conflict struct {
	Path      string `json:"path"`
	Workspace Action `json:"workspace,omitempty"` // the workspace's change at or above Path
	Host      Action `json:"host,omitempty"`      // the host's change at or above Path
	Reason    string `json:"reason"`
}

// StatusResult is the status response.
type StatusResult struct {
	OK          bool       `json:"ok"`
	WorkspaceID string     `json:"workspaceId"`
	SandboxPath string     `json:"sandboxPath"`
	Changes     []Change   `json:"changes"`
	Conflicts   []Conflict `json:"conflicts"`
	// Diff is the unified diff of Changes, when asked for (diff.go); DiffTruncated
	// says files were left out to keep it within DiffTotalMax.
	Diff          string `json:"diff,omitempty"`
	DiffTruncated bool   `json:"diffTruncated,omitempty"`
	// Pending: with Paths, the changes left out.
	Pending []Change `json:"pending,omitempty"`
	// Summarized says which new directories are listed as one change and how to
	// list their entries.
	Summarized string `json:"summarized,omitempty"`
	// Ignored: the changes the ignore rules left out (ignore.go).
	Ignored *Ignored `json:"ignored,omitempty"`
}

// StatusOptions are status's optional parameters; nil means none.
type StatusOptions struct {
	// Diff asks for the unified diff of the changes (bounded: see diff.go).
	Diff bool
	// Paths narrows the changes, conflicts and diff to those at or beneath these
	// paths (relative to the workspace root, as status lists them).
	Paths []string
	// IncludeIgnored lists the changes the ignore rules would leave out.
	IncludeIgnored bool
}

// opened holds a workspace's trees, open for one operation.
type opened struct {
	rec                  *record
	ex                   excludes
	dir, src, base, work *root
}

func (s *Store) open(id string) (*opened, error) {
	rec, err := s.loadRecord(id)
	if err != nil {
		return nil, err
	}
	o := &opened{rec: rec, ex: excludes(rec.Excludes)}
	for _, t := range []struct {
		dst  **root
		path string
		what string
		role string
	}{{&o.dir, rec.dir(), "storage", roleStorage}, {&o.src, rec.Source, "hostPath", roleSource}, {&o.base, rec.baseline(), "baseline", roleStorage}, {&o.work, rec.work(), "working tree", roleStorage}} {
		if *t.dst, err = openRoot(t.path); err != nil {
			o.Close()
			return nil, fmt.Errorf("workspace %s: opening %s: %w", id, t.what, err)
		}
		(*t.dst).role = t.role
	}
	return o, nil
}

func (o *opened) Close() {
	for _, r := range []*root{o.dir, o.src, o.base, o.work} {
		if r != nil {
			r.Close()
		}
	}
}

// plan is the comparison of baseline, working tree and host that status reports and
// sync applies.
//
// The host is not scanned: only the host paths that can matter are looked at (see
// hostChanges), so status and sync cost one scan of the working tree plus the
// baseline manifest, whatever the size of the source.
type plan struct {
	o           *opened
	base, work  tree
	host        map[string]hostEntry // host paths looked up so far
	hostErr     error                // the first failed host lookup
	baseScanned bool                 // base came from a scan, not the manifest
	ex          excludes
	ws, hs      map[string]Action // per-path changes: baseline→work, baseline→host
	converged   []string          // changed identically on both sides
	report      map[string]string // ws path → the listed change that covers it
	changes     []Change
	conflicts   []Conflict
	// ignored: what the ignore rules left out (nil with includeIgnored or when
	// none); ignoreBlocks: directories the workspace replaces with a file though
	// they hold ignored host entries → one such entry.
	ignored      *Ignored
	ignoreBlocks map[string]string
	// expand: paths a caller named; new directories at or beneath them are listed
	// entry by entry.
	expand []string
}

func makePlan(ctx context.Context, o *opened, includeIgnored bool) (*plan, error) {
	pl := &plan{o: o, ex: o.ex, host: map[string]hostEntry{}, ignoreBlocks: map[string]string{}}
	var berr, werr error
	var wg sync.WaitGroup
	wg.Go(func() { pl.base, pl.baseScanned, berr = loadBaseline(ctx, o.dir, o.base, o.ex) })
	pl.work, werr = scan(ctx, o.work, o.ex)
	wg.Wait()
	for _, err := range []error{berr, werr} {
		if err != nil {
			return nil, fmt.Errorf("scanning workspace %s: %w", o.rec.ID, err)
		}
	}
	var err error
	if pl.ws, err = diff(pl.base, pl.work, o.base, o.work); err != nil {
		return nil, fmt.Errorf("comparing working tree: %w", err)
	}
	if !includeIgnored {
		pl.ignored = pl.dropIgnored(ctx)
	}
	if pl.hs, err = pl.hostChanges(ctx); err != nil {
		return nil, fmt.Errorf("comparing host: %w", err)
	}
	// A path both sides changed to the same result is no change and no conflict; it
	// arises when a sync was interrupted between the host write and the baseline update.
	for p := range pl.ws {
		if _, ok := pl.hs[p]; !ok {
			continue
		}
		w, wok := pl.work.get(p)
		h, hok := pl.hostAt(p)
		act, err := compare(w, h, wok, hok, o.work, o.src, p)
		if err != nil {
			return nil, fmt.Errorf("comparing %s: %w", p, err)
		}
		if act == "" {
			pl.converged = append(pl.converged, p)
			delete(pl.ws, p)
			delete(pl.hs, p)
		}
	}
	pl.collapse()
	pl.findConflicts()
	if pl.hostErr != nil {
		return nil, fmt.Errorf("comparing host: %w", pl.hostErr)
	}
	if pl.baseScanned {
		// Best effort: without a manifest the next operation scans the baseline again.
		writeManifest(o.dir, o.base, pl.base)
	}
	return pl, nil
}

// removesDir reports whether the workspace removes the directory at p (deleted, or
// replaced by a non-directory).
func (pl *plan) removesDir(p string) bool {
	if act := pl.ws[p]; act != ActionDelete && act != ActionReplace {
		return false
	}
	b, _ := pl.base.get(p)
	return b.isDir()
}

// collapse builds the reported change list: deletions beneath a removed directory are
// covered by that directory's entry, and the entries of a large new directory by its
// own (summary.go).
func (pl *plan) collapse() {
	pl.report = make(map[string]string, len(pl.ws))
	pl.changes = []Change{}
	sums := pl.newDirs(pl.report)
	for p, act := range pl.ws {
		if c := sums[p]; c != nil {
			pl.report[p] = p
			pl.changes = append(pl.changes, *c)
			continue
		}
		if _, inDir := pl.report[p]; inDir {
			continue // beneath a new directory listed as one
		}
		rep := p
		if act == ActionDelete {
			ancestors(p, func(a string) bool {
				if pl.removesDir(a) {
					rep = a // keep climbing: the outermost removal is the one listed
				}
				return false
			})
		}
		pl.report[p] = rep
		if rep == p {
			pl.changes = append(pl.changes, Change{Path: p, Action: act})
		}
	}
	sort.Slice(pl.changes, func(i, j int) bool { return pl.changes[i].Path < pl.changes[j].Path })
}

func (pl *plan) findConflicts() {
	found := map[string]Conflict{}
	add := func(c Conflict) {
		if _, dup := found[c.Path]; !dup {
			found[c.Path] = c
		}
	}
	for p, wa := range pl.ws {
		if ha, ok := pl.hs[p]; ok {
			add(Conflict{Path: p, Workspace: wa, Host: ha, Reason: bothChangedReason(p)})
			continue
		}
		ancestors(p, func(a string) bool {
			ha := pl.hs[a]
			if ha != ActionDelete && ha != ActionReplace {
				return false
			}
			add(Conflict{Path: p, Workspace: wa, Host: ha, Reason: fmt.Sprintf("the host %sd %s since the baseline", ha, a)})
			return true
		})
	}
	for q, ha := range pl.hs {
		if _, ok := pl.ws[q]; ok {
			continue
		}
		ancestors(q, func(a string) bool {
			if !pl.removesDir(a) {
				return false
			}
			add(Conflict{Path: q, Workspace: pl.ws[a], Host: ha, Reason: fmt.Sprintf("the workspace removes directory %s, but the host changed %s inside it", a, q)})
			return true
		})
	}
	for p, e := range pl.ignoreBlocks {
		if _, still := pl.ws[p]; still {
			add(Conflict{Path: p, Workspace: pl.ws[p], Reason: fmt.Sprintf(
				"replacing directory %s would delete %s on the host, which the ignore rules cover; sync never deletes ignored paths (includeIgnored: true treats them as any other)", p, e)})
		}
	}
	for _, ch := range pl.changes {
		if e, ok := pl.ex.under(ch.Path); ok && pl.removesDir(ch.Path) {
			add(Conflict{Path: ch.Path, Workspace: ch.Action, Reason: fmt.Sprintf(
				"removing directory %s would delete excluded path %s on the host; excluded paths are protected", ch.Path, e)})
		}
	}
	isGit := map[string]bool{}
	for p, wa := range pl.ws {
		w, ok := pl.work.get(p)
		typ := uint32(0)
		if ok {
			typ = w.typ
		}
		if reason := gitRisk(p, typ); reason != "" {
			add(Conflict{Path: p, Workspace: wa, Reason: reason})
			continue
		}
		if reason := pl.bareRisk(p, isGit); reason != "" {
			add(Conflict{Path: p, Workspace: wa, Reason: reason})
			continue
		}
		switch {
		case !ok:
		case !supportedType(w.typ):
			add(Conflict{Path: p, Workspace: wa, Reason: fmt.Sprintf(
				"the workspace has a %s here; only regular files, directories and symlinks can be synced", typeName(w.typ))})
		case w.typ == unix.S_IFLNK:
			if reason := pl.checkLink(p, w.link); reason != "" {
				add(Conflict{Path: p, Workspace: wa, Reason: reason})
			}
		}
	}
	pl.conflicts = make([]Conflict, 0, len(found))
	for _, c := range found {
		pl.conflicts = append(pl.conflicts, c)
	}
	sort.Slice(pl.conflicts, func(i, j int) bool { return pl.conflicts[i].Path < pl.conflicts[j].Path })
}

// beginPlanned starts an operation on workspace id with its trees open and compared;
// done closes them and releases the locks. A change (action "sync", "resolve")
// holds the workspace's own lock too (wslock.go); status ("") does not.
func (s *Store) beginPlanned(ctx context.Context, id, change string, includeIgnored bool) (o *opened, pl *plan, done func(), err error) {
	unchange := func() {}
	if change != "" {
		if unchange, err = s.change(ctx, id, change); err != nil {
			return nil, nil, nil, err
		}
	}
	unlock, err := s.begin(ctx)
	if err != nil {
		unchange()
		return nil, nil, nil, err
	}
	release := func() { unlock(); unchange() }
	if o, err = s.open(id); err != nil {
		release()
		return nil, nil, nil, err
	}
	for attempt := 1; ; attempt++ {
		pl, err = makePlan(ctx, o, includeIgnored)
		// status runs beside the calls that use the workspace (wslock.go): a file
		// one of them replaces while the scan reads it is looked at again.
		if err == nil || change != "" || attempt == statusAttempts || !racedScan(err) {
			break
		}
	}
	if err != nil {
		o.Close()
		release()
		return nil, nil, nil, err
	}
	return o, pl, func() { o.Close(); release() }, nil
}

// statusAttempts bounds how often status plans again after a scan that raced a
// writer.
const statusAttempts = 3

// racedScan reports errors a scan gets when an entry changes under it.
func racedScan(err error) bool {
	return errors.Is(err, ErrChanged) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

// Status compares the baseline with the working tree (the changes sync would apply)
// and with the host (to find conflicts). It changes nothing but leftover staging and
// the baseline manifest, a private cache.
func (s *Store) Status(ctx context.Context, id string) (*StatusResult, error) {
	return s.StatusWith(ctx, id, nil)
}

// StatusWith is Status with options.
func (s *Store) StatusWith(ctx context.Context, id string, opts *StatusOptions) (*StatusResult, error) {
	if opts == nil {
		opts = &StatusOptions{}
	}
	o, pl, done, err := s.beginPlanned(ctx, id, "", opts.IncludeIgnored)
	if err != nil {
		return nil, err
	}
	defer done()
	all := pl.changes
	if err := pl.narrow(opts.Paths); err != nil {
		return nil, err
	}
	res := &StatusResult{OK: true, WorkspaceID: id, SandboxPath: o.rec.SandboxPath, Changes: pl.changes, Conflicts: pl.conflicts,
		Summarized: summarized(pl.changes), Ignored: pl.ignored}
	if opts.Paths != nil {
		res.Pending = pendingOf(all, pl.changes)
	}
	if opts.Diff {
		res.Diff, res.DiffTruncated = pl.diffText()
	}
	return res, nil
}

// narrow restricts the plan to the paths a caller named ("paths"), if any.
func (pl *plan) narrow(paths []string) error {
	if paths == nil {
		return nil
	}
	clean, err := cleanPaths("paths", pl.o.rec.SandboxPath, paths)
	if err != nil {
		return err
	}
	pl.expand = clean
	return pl.restrict("paths", clean)
}

// dirty reports whether the working tree differs from the baseline.
func (s *Store) dirty(ctx context.Context, rec *record) (bool, error) {
	var roots [3]*root
	defer func() {
		for _, r := range roots {
			if r != nil {
				r.Close()
			}
		}
	}()
	for i, p := range []string{rec.dir(), rec.baseline(), rec.work()} {
		var err error
		if roots[i], err = openRoot(p); err != nil {
			return false, err
		}
	}
	ex := excludes(rec.Excludes)
	bt, _, err := loadBaseline(ctx, roots[0], roots[1], ex)
	if err != nil {
		return false, err
	}
	wt, err := scan(ctx, roots[2], ex)
	if err != nil {
		return false, err
	}
	d, err := diff(bt, wt, roots[1], roots[2])
	return len(d) > 0, err
}

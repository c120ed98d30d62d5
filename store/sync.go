package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sys/unix"
)

const recovery = "Sync stopped part-way. The paths in applied were synced and the rest were not: each path, a replaced directory included, is wholly old or wholly new on the host; " +
	"the workspace is kept. Run status to see what remains, fix the cause, then sync again."

// testHookApplied, when set by tests, runs after each host path is written or removed.
var testHookApplied func(rel string)

// Sync applies the workspace's changes to the host. With conflicts nothing is applied
// and the result has OK false. Otherwise each path is applied on its own: files are
// staged in .autobox-sync-<random> in the source root, fsynced and renamed into place,
// after rechecking that the host path is still as scanned. The baseline advances only
// for applied paths, so a sync that stops part-way can be retried.
//
// Go errors mean nothing was applied: unknown id, busy lock, unreadable trees.
func (s *Store) Sync(ctx context.Context, id string) (*SyncResult, error) {
	return s.SyncWith(ctx, id, nil)
}

// SyncOptions are sync's optional parameters; nil means none.
type SyncOptions struct {
	// Paths applies only the changes at or beneath these paths (and the new
	// directories they need); the others stay pending. Conflicts elsewhere do not
	// stop it.
	Paths []string
	// IncludeIgnored syncs the changes the ignore rules would leave out.
	IncludeIgnored bool
}

// SyncWith is Sync with options.
func (s *Store) SyncWith(ctx context.Context, id string, opts *SyncOptions) (*SyncResult, error) {
	if opts == nil {
		opts = &SyncOptions{}
	}
	o, pl, done, err := s.beginPlanned(ctx, id, "sync", opts.IncludeIgnored)
	if err != nil {
		return nil, err
	}
	defer done()
	all := pl.changes
	if err := pl.narrow(opts.Paths); err != nil {
		return nil, err
	}
	res := &SyncResult{WorkspaceID: id, Changes: pl.changes, Applied: []string{}, Ignored: pl.ignored}
	if opts.Paths != nil {
		res.Pending = pendingOf(all, pl.changes)
	}
	if len(pl.conflicts) > 0 {
		res.Conflicts = pl.conflicts
		return res, nil
	}
	a := &applier{o: o, pl: pl, removed: map[string]bool{}, touched: map[string]bool{}}
	err = a.run(ctx)
	res.Applied, res.ClonedFiles, res.CopiedFiles = a.applied, a.cloned, a.copied
	if res.Applied == nil {
		res.Applied = []string{}
	}
	if err != nil {
		res.Error = fmt.Sprintf("sync of workspace %s stopped: %v", id, err)
		res.Recovery = recovery
		return res, nil
	}
	res.OK = true
	return res, nil
}

// op is one path to bring to the working tree's state: on the host and in the
// baseline, or (converged paths) in the baseline only.
type op struct {
	path   string
	remove bool // remove the old entry (phase 1); otherwise put the working tree's
	host   bool
}

type applier struct {
	o              *opened
	pl             *plan
	hostStage      *stageDir
	baseStage      *stageDir
	staged         map[string]*stagedFile // files of the current window
	removed        map[string]bool        // host paths removed in phase 1
	touched        map[string]bool        // host directories to fsync at the end
	left           map[string]int         // listed change → host ops not yet done
	builds         map[string]*build      // host non-directories replaced by directories
	applied        []string
	cloned, copied int
}

func (a *applier) ops() (removals, puts []op) {
	a.left = map[string]int{}
	for p, act := range a.pl.ws {
		if act == ActionDelete || a.pl.removesDir(p) {
			removals = append(removals, op{path: p, remove: true, host: true})
			a.left[a.pl.report[p]]++
		}
		if act != ActionDelete {
			puts = append(puts, op{path: p, host: true})
			a.left[a.pl.report[p]]++
		}
	}
	for _, p := range a.pl.converged {
		if _, inWork := a.pl.work.get(p); inWork {
			puts = append(puts, op{path: p})
		} else {
			removals = append(removals, op{path: p, remove: true})
		}
	}
	// Children go before their directory when removing, after it when creating.
	sort.Slice(removals, func(i, j int) bool { return removals[i].path > removals[j].path })
	sort.Slice(puts, func(i, j int) bool { return puts[i].path < puts[j].path })
	return removals, puts
}

func (a *applier) run(ctx context.Context) (err error) {
	removals, puts := a.ops()
	if len(removals)+len(puts) == 0 {
		return nil
	}
	a.planBuilds(puts)
	if a.hostStage, err = newStage(a.o.src, ".autobox-sync-"); err != nil {
		return inUserWords(a.o.src, "", "creating a staging directory in %s", err)
	}
	defer a.hostStage.remove()
	if a.baseStage, err = newStage(a.o.dir, "stage-"); err != nil {
		return inUserWords(a.o.dir, "", "creating a staging directory in %s", err)
	}
	defer a.baseStage.remove()
	if err := dropManifest(a.o.dir); err != nil {
		return fmt.Errorf("invalidating the baseline manifest: %w", err)
	}
	all := append(removals, puts...)
	for ops := all; len(ops) > 0 && err == nil; {
		// Files are staged a window at a time, in parallel, so their clones' writeback
		// and fsyncs overlap; then the window is applied path by path, in order.
		n := a.stageWindow(ctx, ops)
		err = a.applyAll(ctx, ops[:n])
		ops = ops[n:]
	}
	if err != nil {
		return err
	}
	// The manifest describes the baseline, which is complete whether or not the host
	// flush succeeds, so it is written while the flush waits for the disk.
	var wg sync.WaitGroup
	wg.Go(func() { a.updateManifest(all) })
	defer wg.Wait()
	return a.flushHost()
}

func (a *applier) applyAll(ctx context.Context, ops []op) (err error) {
	for _, o := range ops {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("cancelled: %w", err)
		}
		if o.remove {
			err = a.removeOne(o)
		} else {
			err = a.putOne(o)
		}
		if err != nil {
			return err
		}
		if o.host && testHookApplied != nil {
			testHookApplied(o.path)
		}
	}
	return nil
}

// updateManifest records the baseline after a complete sync: the plan's baseline with
// every path an op touched, and its directory, looked at again. Descendants of a
// removed directory are ops of their own. A failure leaves no manifest, which only
// costs the next operation a baseline scan.
func (a *applier) updateManifest(ops []op) {
	touched := map[string]bool{}
	for _, o := range ops {
		touched[o.path] = true
		touched[parentOf(o.path)] = true
	}
	delete(touched, "") // the root's stamp is taken when writing
	// Parents first: a new directory's listing must exist before its entries go in.
	for _, p := range slices.Sorted(maps.Keys(touched)) {
		e, ok, err := a.o.base.lstat(p)
		if err != nil {
			return
		}
		if ok {
			a.pl.base.set(p, e)
		} else {
			a.pl.base.del(p)
		}
	}
	writeManifest(a.o.dir, a.o.base, a.pl.base)
}

func hostChanged(p, why string) error {
	return &detailError{kind: ErrChanged, msg: fmt.Sprintf(
		"Host changed while staging sync: %s (%s); pause external writers on the host and the workspace, then check status and retry", p, why)}
}

func workChanged(p string) error {
	return &detailError{kind: ErrChanged, msg: fmt.Sprintf(
		"Workspace changed while staging sync: %s; let running commands finish, then check status and retry", p)}
}

// recheckHost verifies the host entry at p is still what the plan saw; expected ok
// false means nothing may be there.
func (a *applier) recheckHost(pfd int, name, p string, want entry, wantOK bool) error {
	cur, ok, err := lstatAt(pfd, name)
	if err != nil {
		return err
	}
	switch {
	case ok != wantOK && wantOK:
		return hostChanged(p, "it was removed")
	case ok != wantOK:
		return hostChanged(p, "something appeared there")
	case ok && !sameMeta(cur, want):
		return hostChanged(p, "it was modified")
	}
	return nil
}

// removeOne removes a host path the workspace deleted, or sets up the removal of a
// directory it replaced. A directory goes in one rename (see replace.go), so the
// entries beneath it have nothing left to do.
func (a *applier) removeOne(o op) error {
	if o.host {
		if a.pl.report[o.path] != o.path {
			a.hostDone(o.path) // beneath a removed directory: removed with it
			return nil
		}
		if _, put := a.pl.work.get(o.path); put {
			a.hostDone(o.path) // a directory replaced: swapped when the new entry is put
			return nil
		}
		pfd, name, err := a.o.src.parent(o.path)
		if err != nil {
			return hostChanged(o.path, err.Error())
		}
		defer unix.Close(pfd)
		h, _ := a.pl.hostAt(o.path)
		if err := a.recheckHost(pfd, name, o.path, h, true); err != nil {
			return err
		}
		if h.isDir() {
			err = a.removeHostDir(pfd, name, o.path)
		} else if err = step("unlink " + o.path); err == nil {
			err = unix.Unlinkat(pfd, name, 0)
		}
		if err != nil {
			return fmt.Errorf("removing %s from the host: %w", o.path, err)
		}
		a.removed[o.path] = true
		delete(a.touched, o.path) // nothing left to flush in a removed directory
		a.touched[parentOf(o.path)] = true
		a.hostDone(o.path)
	}
	return a.inBaseline(o.path, func(pfd int, name string) error { return removeAllAt(pfd, name) })
}

func (a *applier) putOne(o op) error {
	w, _ := a.pl.work.get(o.path)
	sf := a.staged[o.path]
	switch {
	case sf != nil && sf.err != nil:
		return sf.err
	case sf == nil && w.typ == unix.S_IFREG: // not staged: the window was cut short
		return fmt.Errorf("%s was not staged", o.path)
	case sf == nil:
		if err := a.recheckWork(o.path, w); err != nil {
			return err
		}
	}
	var b *build
	if o.host {
		b = a.buildOf(o.path)
		if err := a.putHost(o.path, w, sf, b); err != nil {
			return err
		}
		a.hostDone(o.path)
	}
	base := func() error { return a.putBaseline(o.path, w, sf) }
	if b == nil {
		return base()
	}
	// Beneath a build, the baseline changes only once the build is swapped in.
	b.base = append(b.base, base)
	if b.left--; b.left == 0 {
		return a.finishBuild(b)
	}
	return nil
}

func (a *applier) putBaseline(p string, w entry, sf *stagedFile) error {
	return a.inBaseline(p, func(pfd int, name string) error {
		cur, ok, err := lstatAt(pfd, name)
		if err != nil {
			return err
		}
		if ok && cur.isDir() != w.isDir() { // rename cannot swap a directory for a non-directory
			if err := removeAllAt(pfd, name); err != nil {
				return err
			}
			ok = false
		}
		var have *entry
		if ok {
			have = &cur
		}
		var tmp string
		if sf != nil {
			tmp = sf.baseTmp
		}
		return put(pfd, name, w, tmp, have, a.baseStage)
	})
}

// recheckWork verifies the working tree still holds what the plan saw at p (a
// directory or link; files are checked as they are staged).
func (a *applier) recheckWork(p string, w entry) error {
	cur, ok, err := a.o.work.lstat(p)
	if err != nil || !ok || !sameMeta(cur, w) {
		return workChanged(p)
	}
	return nil
}

// putHost puts the working tree's p on the host: in place, swapped for a directory it
// replaces, or into build b (nil when p is not beneath one).
func (a *applier) putHost(p string, w entry, sf *stagedFile, b *build) error {
	if b != nil && p == b.root {
		b.name = a.hostStage.next()
	}
	pfd, name, err := a.hostParent(p, b)
	if err != nil {
		return hostChanged(p, err.Error())
	}
	defer unix.Close(pfd)
	h, hok := a.pl.hostAt(p)
	if a.removed[p] || b != nil {
		hok = false // beneath a build, nothing is there yet
	}
	if err := a.recheckHost(pfd, name, p, h, hok); err != nil {
		return err
	}
	var tmp string
	if sf != nil {
		tmp = sf.hostTmp
	}
	if hok && h.isDir() && !w.isDir() {
		err = a.replaceDir(pfd, name, p, w, tmp)
	} else {
		var have *entry
		if hok {
			have = &h
		}
		err = put(pfd, name, w, tmp, have, a.hostStage)
	}
	if errors.Is(err, unix.EEXIST) {
		return hostChanged(p, "something appeared there")
	} else if err != nil {
		return inUserWords(a.o.src, p, "writing %s to the host", err)
	}
	if sf != nil {
		if sf.cloned {
			a.cloned++
		} else {
			a.copied++
		}
	}
	a.touched[parentOf(p)] = true // flushed at the end, when a build is in place
	return nil
}

// replaceDir swaps host directory p (pfd/name) for w, a file staged as tmp or a link:
// the directory is checked to hold only what the plan saw, then exchanged.
func (a *applier) replaceDir(pfd int, name, p string, w entry, tmp string) error {
	if w.typ == unix.S_IFLNK {
		tmp = a.hostStage.next()
		if err := step("symlink " + p); err != nil {
			return err
		}
		if err := unix.Symlinkat(w.link, a.hostStage.fd, tmp); err != nil {
			return &os.PathError{Op: "symlink", Path: name, Err: err}
		}
	}
	if err := a.checkMoved(pfd, name, p); err != nil {
		return err
	}
	return a.swapIn(pfd, name, p, tmp)
}

// put makes pfd/name match w, given what is there now (have, nil for nothing). Files
// (already staged as tmp) and links are built in the staging directory and renamed
// over the old entry, so a reader sees the old or the new one and a hard link the old
// file shares with something else is left alone. Where nothing was, the rename
// refuses to replace.
func put(pfd int, name string, w entry, tmp string, have *entry, st *stageDir) error {
	switch w.typ {
	case unix.S_IFDIR:
		if have == nil || !have.isDir() {
			if err := step("mkdir " + name); err != nil {
				return err
			}
			if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
				return &os.PathError{Op: "mkdir", Path: name, Err: err}
			}
		}
		return fchmodDirAt(pfd, name, w.perm)
	case unix.S_IFLNK:
		tmp = st.next()
		if err := step("symlink " + name); err != nil {
			return err
		}
		if err := unix.Symlinkat(w.link, st.fd, tmp); err != nil {
			return &os.PathError{Op: "symlink", Path: name, Err: err}
		}
	case unix.S_IFREG:
	default:
		return fmt.Errorf("%s: cannot sync a %s", name, typeName(w.typ))
	}
	rename := unix.Renameat
	if have == nil {
		rename = renameNoReplace
	}
	if err := step("rename " + name); err != nil {
		return err
	}
	if err := rename(st.fd, tmp, pfd, name); err != nil {
		return &os.PathError{Op: "rename", Path: name, Err: err}
	}
	return nil
}

// inBaseline runs fn on the parent of p in the baseline. The baseline mirrors source
// permissions, so a read-only directory is opened up for the change and restored.
func (a *applier) inBaseline(p string, fn func(pfd int, name string) error) error {
	pfd, name, err := a.o.base.parent(p)
	if err != nil {
		return fmt.Errorf("updating baseline %s: %w", p, err)
	}
	defer unix.Close(pfd)
	err = fn(pfd, name)
	if errors.Is(err, unix.EACCES) {
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) == nil && unix.Fchmod(pfd, uint32(st.Mode)&0o7777|0o700) == nil {
			err = fn(pfd, name)
			unix.Fchmod(pfd, uint32(st.Mode)&0o7777)
		}
	}
	if err != nil {
		return inUserWords(a.o.base, p, "updating baseline %s", err)
	}
	return nil
}

// flushHost makes the renames durable: one fsync per touched host directory.
func (a *applier) flushHost() error {
	for d := range a.touched {
		fd, err := a.o.src.openDir(d)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue // removed or replaced later in the same sync
		}
		if err != nil {
			return fmt.Errorf("flushing host directory %q: %w", d, err)
		}
		err = unix.Fsync(fd)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("flushing host directory %q: %w", d, err)
		}
	}
	return nil
}

package store

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// hostEntry is one looked-up host path: its entry, or ok false when a scan of the host
// would not have listed it.
type hostEntry struct {
	e  entry
	ok bool
}

// hostChanges returns the baseline→host changes at every host path that can affect the
// plan, which is what a full host scan would give restricted to those paths:
//
//   - paths the workspace changed (both-sides conflicts, converged edits, rechecks);
//   - their ancestors (a host that removed or replaced a directory above a change);
//   - everything on the host beneath a directory the workspace removes (host edits
//     that removal would destroy).
//
// Symlink checks look up further host paths on demand (hostAt). Host changes anywhere
// else never produce a change or a conflict, so they are not looked at. When the
// workspace changed a large part of the tree, the host is scanned whole instead.
func (pl *plan) hostChanges(ctx context.Context) (map[string]Action, error) {
	need := make(map[string]bool, len(pl.ws))
	for p := range pl.ws {
		need[p] = true
		ancestors(p, func(a string) bool {
			if need[a] {
				return true // a's own ancestors were added with it
			}
			need[a] = true
			return false
		})
	}
	if len(need) > hostScanMin && len(need)*hostScanRatio > pl.base.count() {
		// So many lookups (each walks from the root) cost more than one scan.
		host, err := scan(ctx, pl.o.src, pl.ex)
		if err != nil {
			return nil, err
		}
		host.each(func(p string, e entry) { pl.host[p] = hostEntry{e, true} })
		for q := range need {
			if _, seen := pl.host[q]; !seen {
				pl.host[q] = hostEntry{} // absent at planning time, whatever appears later
			}
		}
		return diff(pl.base, host, pl.o.base, pl.o.src)
	}
	for p := range pl.ws {
		if !pl.removesDir(p) || pl.removedAbove(p) {
			continue
		}
		if h, ok := pl.hostAt(p); !ok || !h.isDir() {
			continue
		}
		sub, err := scanBelow(ctx, pl.o.src, p, pl.ex, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			pl.host[p] = hostEntry{} // gone since the lookup: absent, as a scan now would see it
			continue
		}
		if err != nil {
			return nil, err
		}
		sub.each(func(q string, e entry) {
			pl.host[q] = hostEntry{e, true}
			need[q] = true
		})
	}
	hs := map[string]Action{}
	for q := range need {
		b, bok := pl.base.get(q)
		h, hok := pl.hostAt(q)
		act, err := compare(b, h, bok, hok, pl.o.base, pl.o.src, q)
		if err != nil {
			return nil, err
		}
		if act != "" {
			hs[q] = act
		}
	}
	if pl.hostErr != nil {
		return nil, pl.hostErr
	}
	return hs, nil
}

// The host is scanned whole when there are more than hostScanMin paths to look up and
// they exceed 1/hostScanRatio of the baseline's entries. Variables for tests.
var hostScanMin, hostScanRatio = 256, 4

// removedAbove reports whether the workspace removes a directory above p.
func (pl *plan) removedAbove(p string) (found bool) {
	ancestors(p, func(a string) bool {
		found = pl.removesDir(a)
		return found
	})
	return found
}

// hostAt returns the host entry at p as a scan of the host would have recorded it,
// looking it up on first use. Every path sync applies is looked up while planning, so
// the applier's rechecks compare with the host as planned, not as it is later. A failed lookup is remembered in hostErr and reads as
// absent; the plan fails with that error.
func (pl *plan) hostAt(p string) (entry, bool) {
	if h, ok := pl.host[p]; ok {
		return h.e, h.ok
	}
	e, ok, err := pl.lookupHost(p)
	if err != nil && pl.hostErr == nil {
		pl.hostErr = err
	}
	pl.host[p] = hostEntry{e, ok}
	return e, ok
}

// lookupHost mirrors scan for one path: absent if it is skipped, if its parent was not
// a directory the scan would descend into, or if nothing is there; never following a
// symlink.
func (pl *plan) lookupHost(p string) (entry, bool, error) {
	top, _, _ := strings.Cut(p, "/")
	if skip(top, pl.ex) || skip(p, pl.ex) {
		return entry{}, false, nil
	}
	dir, name := parentOf(p), p[strings.LastIndexByte(p, '/')+1:]
	if dir != "" {
		if d, ok := pl.hostAt(dir); !ok || !d.isDir() {
			return entry{}, false, nil
		}
	}
	fd, err := pl.o.src.openDir(dir)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return entry{}, false, nil // replaced since its lookup: a scan now would not descend
	}
	if err != nil {
		return entry{}, false, err
	}
	defer unix.Close(fd)
	e, ok, err := lstatAt(fd, name)
	if err != nil {
		return entry{}, false, pl.o.src.errorf("lstat", p, err)
	}
	return e, ok, nil
}

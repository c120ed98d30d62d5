// Copying a source tree into a new workspace's baseline and working tree at
// once (Create's build): in parallel by directory, cloning where it can, and
// failing with ErrChanged when the source changes under the copy.

package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// createWorkers is how many goroutines copy at once. Cloning is kernel work that also
// waits (filesystem locks, the log), so a few more than the cores keep them busy.
var createWorkers = 2 * runtime.GOMAXPROCS(0)

// testHookCreateFile, when set by tests, runs before each source file is copied.
var testHookCreateFile func(rel string)

// copier copies a source tree into the baseline and the working tree at once,
// subdirectories by up to createWorkers goroutines; a directory is finished (mode,
// mtime, change check) after its children. It records the baseline's entries for the
// manifest.
type copier struct {
	ctx            context.Context
	cancel         context.CancelFunc // stops the other goroutines after an error
	ex             excludes
	allowCopy      bool
	slots          chan struct{} // extra goroutines that may run
	cloned, copied atomic.Int64
	memo           [2]cloneMemo // baseline, work
	source         string       // hostPath, for messages
	storage        *root        // where the copies go, for out-of-space messages

	mu   sync.Mutex
	err  error // the first failure; what build reports
	base tree  // the baseline as a scan would record it
}

// fail records the first error and stops the other goroutines. Errors after it are
// mostly the cancellation it caused, so they are not reported.
func (c *copier) fail(err error) {
	if err == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		c.cancel()
	}
}

func (c *copier) record(dir string, l []named) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.base[dir] = l
}

func sourceChanged(rel string) error {
	if rel == "" {
		rel = "."
	}
	return &detailError{kind: ErrChanged, msg: fmt.Sprintf(
		"Source changed during creation: %s; pause external writers (editors, watchers, git) on the source and retry", rel)}
}

// sameVersion reports whether two stats describe the same, unmodified inode; ctime
// catches writes that restore the old mtime and size.
func sameVersion(a, b *unix.Stat_t) bool {
	return a.Ino == b.Ino && a.Dev == b.Dev && a.Size == b.Size && a.Mtim == b.Mtim && a.Ctim == b.Ctim && a.Mode == b.Mode
}

// copyDir copies the entries of source directory src (at rel). Entries are dispatched
// on the type readdir reports and each is checked when opened; a name replaced after
// readdir changes src's times, which the check at the end catches.
func (c *copier) copyDir(src, base, work int, rel string) error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	var before, after unix.Stat_t
	if err := unix.Fstat(src, &before); err != nil {
		return fmt.Errorf("create: stat %q: %w", rel, err)
	}
	ents, err := readDirents(src)
	if err != nil {
		return fmt.Errorf("create: reading %q: %w", rel, err)
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	var wg sync.WaitGroup
	// Capacity for every entry, so the slot a subdirectory's goroutine fills never moves.
	found := make([]named, 0, len(ents))
	for _, d := range ents {
		n, p := d.name, joinRel(rel, d.name)
		if skipName(rel, n, c.ex) {
			continue
		}
		if c.ctx.Err() != nil {
			break
		}
		// Directories and links are checked as they are opened or read. A file is
		// stat'ed first too, so a rewrite between that and its open is caught.
		var st unix.Stat_t
		typ := d.typ
		if typ == 0 || typ == unix.S_IFREG {
			if err := unix.Fstatat(src, n, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
				c.fail(sourceChanged(p))
				break
			} else if err != nil {
				c.fail(fmt.Errorf("create: lstat %q: %w", p, err))
				break
			}
			typ = uint32(st.Mode) & unix.S_IFMT
		}
		found = append(found, named{name: n})
		slot := &found[len(found)-1].e
		switch typ {
		case unix.S_IFDIR:
			select {
			case c.slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-c.slots }()
					c.fail(c.copySubdir(src, base, work, n, p, slot))
				})
			default:
				err = c.copySubdir(src, base, work, n, p, slot)
			}
		case unix.S_IFREG:
			*slot, err = c.copyFile(src, base, work, n, p, &st)
		case unix.S_IFLNK:
			*slot, err = c.copyLink(src, base, work, n, p)
		default:
			err = invalidf("hostPath contains a %s at %q; only regular files, directories and symlinks are supported (exclude it or remove it)", typeName(typ), p)
		}
		if err != nil {
			c.fail(err)
			break
		}
	}
	wg.Wait() // the descriptors this level opened stay valid until its children are done
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := unix.Fstat(src, &after); err != nil || !sameVersion(&before, &after) {
		return sourceChanged(rel)
	}
	c.record(rel, found)
	return nil
}

// copySubdir copies source directory n (at p) and stores the baseline's entry for it
// in e.
func (c *copier) copySubdir(src, base, work int, n, p string, e *entry) error {
	fds := [3]int{-1, -1, -1}
	defer func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	var err error
	if fds[0], err = unix.Openat(src, n, openDirFlags, 0); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return sourceChanged(p)
		}
		return fmt.Errorf("create: open %q: %w", p, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fds[0], &st); err != nil {
		return fmt.Errorf("create: stat %q: %w", p, err)
	}
	for i, dir := range []int{base, work} {
		// Writable until filled; the final mode may forbid adding entries.
		if err := unix.Mkdirat(dir, n, 0o700); err != nil {
			return c.storageError("mkdir", p, err)
		}
		if fds[i+1], err = unix.Openat(dir, n, openDirFlags, 0); err != nil {
			return fmt.Errorf("create: open %q: %w", p, err)
		}
	}
	if err := c.copyDir(fds[0], fds[1], fds[2], p); err != nil {
		return err
	}
	perm := uint32(st.Mode) & 0o777
	for i, dir := range []int{base, work} {
		if err := unix.Fchmod(fds[i+1], perm); err != nil {
			return c.storageError("chmod", p, err)
		}
		if err := setTimes(dir, n, st.Mtim.Nano()); err != nil {
			return c.storageError("utimes", p, err)
		}
	}
	var done unix.Stat_t
	if err := unix.Fstat(fds[1], &done); err != nil {
		return fmt.Errorf("create: stat %q: %w", p, err)
	}
	*e = entryOf(&done)
	return nil
}

// copyFile clones (or copies) source file n into the baseline and the working tree and
// returns the baseline's entry.
func (c *copier) copyFile(src, base, work int, n, p string, st *unix.Stat_t) (entry, error) {
	if testHookCreateFile != nil {
		testHookCreateFile(p)
	}
	if err := step("create copy " + p); err != nil {
		return entry{}, c.copyError(p, err)
	}
	// O_NONBLOCK: a FIFO swapped in after readdir must not block the open.
	fd, err := unix.Openat(src, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return entry{}, sourceChanged(p)
	} else if err != nil {
		return entry{}, fmt.Errorf("create: open %q: %w", p, err)
	}
	defer unix.Close(fd)
	var opened, done, placedSt unix.Stat_t
	if err := unix.Fstat(fd, &opened); err != nil || !sameVersion(st, &opened) {
		return entry{}, sourceChanged(p)
	}
	perm := uint32(opened.Mode) & 0o777
	for i, dir := range []int{base, work} {
		pf, err := placeFile(fd, &opened, dir, n, perm, c.allowCopy, &c.memo[i])
		if err != nil {
			if !c.allowCopy && cloneUnsupported(err) {
				return entry{}, cloneError(p, err)
			}
			return entry{}, c.copyError(p, err)
		}
		var st *unix.Stat_t
		if i == 0 { // counts describe source-to-baseline files, as the seed's do
			st = &placedSt
			if pf.cloned {
				c.cloned.Add(1)
			} else {
				c.copied.Add(1)
			}
		}
		if err := pf.finish(perm, opened.Mtim.Nano(), st); err != nil {
			return entry{}, c.copyError(p, err)
		}
	}
	if err := unix.Fstat(fd, &done); err != nil || !sameVersion(&opened, &done) {
		return entry{}, sourceChanged(p)
	}
	return entryOf(&placedSt), nil
}

// copyError describes a failure copying source file p into the workspace; out of
// space, it names the source file and the workspace storage's filesystem.
func (c *copier) copyError(p string, err error) error {
	if se := spaceIn(c.storage, err); se != nil {
		return fmt.Errorf("create: copying %s into the workspace storage: %w", filepath.Join(c.source, p), se)
	}
	return fmt.Errorf("create: %q: %w", p, err)
}

// storageError describes a failure of op (mkdir, symlink...) copying source
// path p into the workspace; out of space, it names the storage's filesystem.
func (c *copier) storageError(op, p string, err error) error {
	return fmt.Errorf("create: copying %s into the workspace storage (%s): %w", filepath.Join(c.source, p), op, orSpace(c.storage, err))
}

// copyLink copies a symlink as a link; its target is never followed.
func (c *copier) copyLink(src, base, work int, n, p string) (entry, error) {
	target, err := readlinkAt(src, n)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
		return entry{}, sourceChanged(p)
	} else if err != nil {
		return entry{}, fmt.Errorf("create: %q: %w", p, err)
	}
	for _, dir := range []int{base, work} {
		if err := unix.Symlinkat(target, dir, n); err != nil {
			return entry{}, c.storageError("symlink", p, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(base, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return entry{}, fmt.Errorf("create: lstat %q: %w", p, err)
	}
	e := entryOf(&st)
	e.link = target
	return e, nil
}

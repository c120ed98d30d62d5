package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// Copy modes for CreateRequest.CopyMode.
const (
	CopyModeClone = "clone" // copy-on-write only; fail rather than copy
	CopyModeAuto  = "auto"  // clone where possible, ordinary copy otherwise (the default)
)

// CreateRequest holds create's parameters; all are fixed for the workspace's life.
type CreateRequest struct {
	HostPath    string   // absolute existing directory; symlinks are resolved
	SandboxPath string   // absolute path the sandbox sees, e.g. /mnt/project; not "/"
	StoragePath string   // "" = Options.DefaultStorage
	CopyMode    string   // "" (auto), "auto" or "clone"
	Excludes    []string // exact relative paths left out of the copy and of syncs
}

// testHookCreateFile, when set by tests, runs before each source file is copied.
var testHookCreateFile func(rel string)

// Create copies req.HostPath into a new workspace: <storage>/<id>/baseline (private,
// what status and sync compare against) and <storage>/<id>/work (the writable tree).
// On any failure the half-built workspace is removed. The record is written last.
func (s *Store) Create(ctx context.Context, req CreateRequest) (*CreateResult, error) {
	unlock, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, ex, err := s.validateCreate(req)
	if err != nil {
		return nil, err
	}
	rec.ID = uuid.NewString()
	if err := step("create mark"); err != nil {
		return nil, fmt.Errorf("%w; nothing was created", s.inState("create: marking creation in progress", err))
	}
	if err := writeFileAtomic(s.pendingPath(rec.ID), []byte(rec.Storage)); err != nil {
		return nil, fmt.Errorf("%w; nothing was created", s.inState("create: marking creation in progress", err))
	}
	// Again now that the marker is written: a call that registers a read-write
	// mount from now on sees the marker (held.go).
	if err := s.checkStorage(rec.Storage); err != nil {
		os.Remove(s.pendingPath(rec.ID))
		return nil, err
	}
	res, err := s.build(ctx, rec, ex)
	if err == nil {
		if err = step("create record"); err == nil {
			err = s.saveRecord(rec)
		}
		if err != nil {
			err = s.inState("create: writing the workspace record", err)
		}
	}
	if err != nil {
		rerr := removeBelow(rec.Storage, rec.ID)
		switch {
		case rerr != nil:
			err = fmt.Errorf("%w (and removing the half-built workspace failed: %v; the next operation removes it)", err, rerr)
		case noSpace(err):
			err = fmt.Errorf("%w; nothing was created (the partial copy was removed)", err)
		}
	}
	step("create unmark")
	os.Remove(s.pendingPath(rec.ID))
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) validateCreate(req CreateRequest) (*record, excludes, error) {
	if !filepath.IsAbs(req.HostPath) {
		return nil, nil, invalidf("hostPath %q must be an absolute path", req.HostPath)
	}
	src, err := filepath.EvalSymlinks(req.HostPath)
	if errors.Is(err, os.ErrNotExist) {
		// EvalSymlinks names the first missing component (lstat /does), not the path.
		return nil, nil, &detailError{kind: ErrInvalid, msg: fmt.Sprintf("hostPath %q does not exist", req.HostPath), cause: err}
	}
	if err != nil {
		return nil, nil, &detailError{kind: ErrInvalid, msg: fmt.Sprintf("hostPath %q: %v", req.HostPath, err), cause: err}
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return nil, nil, invalidf("hostPath %q is not a directory", req.HostPath)
	}
	if msg := policy.LinkProblem("hostPath", req.HostPath, src); msg != "" {
		return nil, nil, invalidf("%s", msg)
	}
	if !path.IsAbs(req.SandboxPath) || strings.ContainsRune(req.SandboxPath, 0) {
		return nil, nil, invalidf("sandboxPath %q must be an absolute path such as /mnt/project", req.SandboxPath)
	}
	sandbox := path.Clean(req.SandboxPath)
	if sandbox == "/" {
		return nil, nil, invalidf("sandboxPath cannot be /")
	}
	mode := req.CopyMode
	if mode == "" {
		mode = CopyModeAuto
	}
	if mode != CopyModeClone && mode != CopyModeAuto {
		return nil, nil, invalidf("copyMode %q: use \"auto\" (default) or \"clone\"", req.CopyMode)
	}
	ex, err := parseExcludes(req.Excludes)
	if err != nil {
		return nil, nil, err
	}
	storage, err := s.resolveStorage(req.StoragePath)
	if err != nil {
		return nil, nil, err
	}
	if policy.Within(storage, src) || policy.Within(src, storage) {
		return nil, nil, invalidf("storagePath %s overlaps hostPath %s: storage must be outside the source and the source outside the storage", storage, src)
	}
	for _, m := range s.ManagedPaths() {
		if policy.Within(src, m) || policy.Within(m, src) {
			return nil, nil, invalidf("hostPath %s overlaps autobox-managed %s (workspace records or storage)", src, m)
		}
	}
	if err := s.checkStorage(storage); err != nil {
		return nil, nil, err
	}
	if err := os.Mkdir(storage, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		if se := spaceInPath(filepath.Dir(storage), roleStorage, err); se != nil {
			err = se
		}
		return nil, nil, fmt.Errorf("creating storagePath %s: %w; nothing was created", storage, err)
	}
	if fi, err := os.Lstat(storage); err != nil || !fi.IsDir() {
		return nil, nil, invalidf("storagePath %s is not a directory", storage)
	}
	return &record{
		Version: recordVersion, Source: src, SandboxPath: sandbox, Storage: storage,
		CopyMode: mode, Excludes: append([]string{}, ex...), Created: time.Now().UTC(),
	}, ex, nil
}

// resolveStorage canonicalises storagePath. A missing storage directory is allowed only
// when its parent exists, so the overlap check works on resolved paths.
func (s *Store) resolveStorage(p string) (string, error) {
	if p == "" {
		if err := os.MkdirAll(s.defaultStorage, os.FileMode(s.idDirMode())); err != nil {
			return "", fmt.Errorf("creating default storage: %w", err)
		}
		if err := s.searchable(s.defaultStorage); err != nil {
			return "", fmt.Errorf("default storage: %w", err)
		}
		return filepath.EvalSymlinks(s.defaultStorage)
	}
	if !filepath.IsAbs(p) {
		return "", invalidf("storagePath %q must be an absolute path", p)
	}
	p = filepath.Clean(p)
	if fi, err := os.Stat(p); err == nil {
		if !fi.IsDir() {
			return "", invalidf("storagePath %q is not a directory", p)
		}
		real, err := filepath.EvalSymlinks(p)
		if msg := policy.LinkProblem("storagePath", p, real); err == nil && msg != "" {
			return "", invalidf("%s", msg)
		}
		return real, err
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("storagePath %q: %w", p, err)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return "", invalidf("storagePath %q does not exist and neither does its parent; create it first", p)
	}
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return "", invalidf("storagePath %q: parent %s is not a directory", p, parent)
	}
	if msg := policy.LinkProblem("storagePath", filepath.Dir(p), parent); msg != "" {
		return "", invalidf("%s", msg)
	}
	return filepath.Join(parent, filepath.Base(p)), nil
}

// build makes <storage>/<id>/{baseline,work} from the source, and the baseline's
// manifest from what it copied.
func (s *Store) build(ctx context.Context, rec *record, ex excludes) (*CreateResult, error) {
	storage, err := openRoot(rec.Storage)
	if err != nil {
		return nil, fmt.Errorf("create: opening storage: %w", err)
	}
	defer storage.Close()
	storage.role = roleStorage
	if err := step("create mkdir"); err != nil {
		return nil, fmt.Errorf("create: making %s: %w", rec.dir(), orSpace(storage, err))
	}
	if err := unix.Mkdirat(storage.fd, rec.ID, s.idDirMode()); err != nil {
		return nil, fmt.Errorf("create: making %s: %w", rec.dir(), orSpace(storage, err))
	}
	dirs := [4]int{-1, -1, -1, -1} // source, baseline, work, <storage>/<id>
	defer func() {
		for _, fd := range dirs {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if dirs[0], err = openDirPath(rec.Source); err != nil {
		return nil, fmt.Errorf("create: opening hostPath: %w", err)
	}
	if dirs[3], err = storage.openDir(rec.ID); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	for i, name := range []string{rec.ID + "/baseline", rec.ID + "/work"} {
		if err := unix.Mkdirat(storage.fd, name, 0o700); err != nil {
			return nil, fmt.Errorf("create: making %s: %w", filepath.Join(rec.Storage, name), orSpace(storage, err))
		}
		if dirs[i+1], err = storage.openDir(name); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &copier{ctx: ctx, cancel: cancel, ex: ex, allowCopy: rec.CopyMode == CopyModeAuto,
		slots: make(chan struct{}, createWorkers-1), base: tree{}, source: rec.Source, storage: &root{fd: dirs[3], path: rec.dir(), role: roleStorage}}
	c.fail(c.copyDir(dirs[0], dirs[1], dirs[2], ""))
	if c.err != nil {
		return nil, c.err
	}
	if err := s.giveWork(dirs[2], rec.work()); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	// Without a manifest every status would scan the baseline until one is written.
	if err = step("create manifest"); err == nil {
		err = writeManifest(c.storage, &root{fd: dirs[1], path: rec.baseline()}, c.base)
	}
	if err != nil {
		return nil, fmt.Errorf("create: writing the baseline manifest: %w", orSpace(c.storage, err))
	}
	if err := syncFS(dirs[1]); err != nil {
		return nil, fmt.Errorf("create: flushing storage: %w", orSpace(c.storage, err))
	}
	cloned, copied := int(c.cloned.Load()), int(c.copied.Load())
	return &CreateResult{
		OK: true, WorkspaceID: rec.ID, Mount: MountRef{WorkspaceID: rec.ID},
		SandboxPath: rec.SandboxPath, ClonedFiles: cloned, CopiedFiles: copied,
		CopyMode: rec.CopyMode, CopiedBy: copiedBy(cloned, copied),
	}, nil
}

// createWorkers is how many goroutines copy at once. Cloning is kernel work that also
// waits (filesystem locks, the log), so a few more than the cores keep them busy.
var createWorkers = 2 * runtime.GOMAXPROCS(0)

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

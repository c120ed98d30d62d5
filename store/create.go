package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// Copy modes for CreateRequest.CopyMode.
const (
	CopyModeClone = "clone" // copy-on-write only; fail rather than copy
	CopyModeAuto  = "auto"  // clone where possible, ordinary copy otherwise
)

// CreateRequest holds create's parameters; all are fixed for the workspace's life.
type CreateRequest struct {
	HostPath    string   // absolute existing directory; symlinks are resolved
	SandboxPath string   // absolute path the sandbox sees, e.g. /mnt/project; not "/"
	StoragePath string   // "" = Options.DefaultStorage
	CopyMode    string   // "" or "clone", or "auto"
	Excludes    []string // exact relative paths left out of the copy and of syncs
}

// MountRef is the mount entry a caller passes to execute_js / exec_command.
type MountRef struct {
	WorkspaceID string `json:"workspaceId"`
}

// CreateResult is the create response. The counts are source files cloned or copied
// into the private baseline.
type CreateResult struct {
	OK          bool     `json:"ok"`
	WorkspaceID string   `json:"workspaceId"`
	Mount       MountRef `json:"mount"`
	SandboxPath string   `json:"sandboxPath"`
	ClonedFiles int      `json:"clonedFiles"`
	CopiedFiles int      `json:"copiedFiles"`
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
	if err := writeFileAtomic(s.pendingPath(rec.ID), []byte(rec.Storage)); err != nil {
		return nil, fmt.Errorf("create: marking creation in progress: %w", err)
	}
	res, err := s.build(ctx, rec, ex)
	if err == nil {
		err = s.saveRecord(rec)
	}
	if err != nil {
		if rerr := removeBelow(rec.Storage, rec.ID); rerr != nil {
			err = fmt.Errorf("%w (and removing the half-built workspace failed: %v)", err, rerr)
		}
	}
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
	if err != nil {
		return nil, nil, &detailError{kind: ErrInvalid, msg: fmt.Sprintf("hostPath %q: %v", req.HostPath, err), cause: err}
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return nil, nil, invalidf("hostPath %q is not a directory", req.HostPath)
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
		mode = CopyModeClone
	}
	if mode != CopyModeClone && mode != CopyModeAuto {
		return nil, nil, invalidf("copyMode %q: use \"clone\" (default) or \"auto\"", req.CopyMode)
	}
	ex, err := parseExcludes(req.Excludes)
	if err != nil {
		return nil, nil, err
	}
	storage, err := s.resolveStorage(req.StoragePath)
	if err != nil {
		return nil, nil, err
	}
	if within(storage, src) || within(src, storage) {
		return nil, nil, invalidf("storagePath %s overlaps hostPath %s: storage must be outside the source and the source outside the storage", storage, src)
	}
	for _, m := range s.ManagedPaths() {
		if within(src, m) || within(m, src) {
			return nil, nil, invalidf("hostPath %s overlaps autobox-managed %s (workspace records or storage)", src, m)
		}
	}
	if err := os.Mkdir(storage, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, nil, fmt.Errorf("creating storagePath: %w", err)
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
		if err := os.MkdirAll(s.defaultStorage, 0o700); err != nil {
			return "", fmt.Errorf("creating default storage: %w", err)
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
		return filepath.EvalSymlinks(p)
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
	return filepath.Join(parent, filepath.Base(p)), nil
}

// within reports whether p is dir or lies beneath it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// build makes <storage>/<id>/{baseline,work} from the source.
func (s *Store) build(ctx context.Context, rec *record, ex excludes) (*CreateResult, error) {
	storage, err := openRoot(rec.Storage)
	if err != nil {
		return nil, fmt.Errorf("create: opening storage: %w", err)
	}
	defer storage.Close()
	if err := unix.Mkdirat(storage.fd, rec.ID, 0o700); err != nil {
		return nil, fmt.Errorf("create: %w", storage.errorf("mkdir", rec.ID, err))
	}
	dirs := [3]int{-1, -1, -1}
	defer func() {
		for _, fd := range dirs {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}()
	if dirs[0], err = unix.Open(rec.Source, openDirFlags, 0); err != nil {
		return nil, fmt.Errorf("create: opening hostPath: %w", &os.PathError{Op: "open", Path: rec.Source, Err: err})
	}
	for i, name := range []string{rec.ID + "/baseline", rec.ID + "/work"} {
		if err := unix.Mkdirat(storage.fd, name, 0o700); err != nil {
			return nil, fmt.Errorf("create: %w", storage.errorf("mkdir", name, err))
		}
		if dirs[i+1], err = storage.openDir(name); err != nil {
			return nil, fmt.Errorf("create: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &copier{ctx: ctx, cancel: cancel, ex: ex, allowCopy: rec.CopyMode == CopyModeAuto,
		slots: make(chan struct{}, runtime.GOMAXPROCS(0)-1)}
	c.fail(c.copyDir(dirs[0], dirs[1], dirs[2], ""))
	if c.err != nil {
		return nil, c.err
	}
	if err := syncFS(dirs[1]); err != nil {
		return nil, fmt.Errorf("create: flushing storage: %w", err)
	}
	return &CreateResult{
		OK: true, WorkspaceID: rec.ID, Mount: MountRef{WorkspaceID: rec.ID},
		SandboxPath: rec.SandboxPath, ClonedFiles: int(c.cloned.Load()), CopiedFiles: int(c.copied.Load()),
	}, nil
}

// copier copies a source tree into the baseline and the working tree at once. Cloning
// is bound by per-file kernel work, so subdirectories are copied by up to GOMAXPROCS
// goroutines; a directory is finished (mode, mtime, change check) after its children.
type copier struct {
	ctx            context.Context
	cancel         context.CancelFunc // stops the other goroutines after an error
	ex             excludes
	allowCopy      bool
	slots          chan struct{} // extra goroutines that may run
	cloned, copied atomic.Int64
	memo           [2]cloneMemo // baseline, work

	mu  sync.Mutex
	err error // the first failure; what build reports
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

func (c *copier) copyDir(src, base, work int, rel string) error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	var before, after unix.Stat_t
	if err := unix.Fstat(src, &before); err != nil {
		return fmt.Errorf("create: stat %q: %w", rel, err)
	}
	names, err := readNames(src)
	if err != nil {
		return fmt.Errorf("create: reading %q: %w", rel, err)
	}
	var wg sync.WaitGroup
	for _, n := range names {
		p := path.Join(rel, n)
		if skip(p, c.ex) {
			continue
		}
		if c.ctx.Err() != nil {
			break
		}
		var st unix.Stat_t
		err := unix.Fstatat(src, n, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch typ := uint32(st.Mode) & unix.S_IFMT; {
		case errors.Is(err, unix.ENOENT):
			err = sourceChanged(p)
		case err != nil:
			err = fmt.Errorf("create: lstat %q: %w", p, err)
		case typ == unix.S_IFDIR:
			select {
			case c.slots <- struct{}{}:
				wg.Go(func() {
					defer func() { <-c.slots }()
					c.fail(c.copySubdir(src, base, work, n, p, &st))
				})
			default:
				err = c.copySubdir(src, base, work, n, p, &st)
			}
		case typ == unix.S_IFREG:
			err = c.copyFile(src, base, work, n, p, &st)
		case typ == unix.S_IFLNK:
			err = copyLink(src, base, work, n, p)
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
	return nil
}

func (c *copier) copySubdir(src, base, work int, n, p string, st *unix.Stat_t) error {
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i, dir := range []int{src, base, work} {
		if i > 0 {
			// Writable until filled; the final mode may forbid adding entries.
			if err := unix.Mkdirat(dir, n, 0o700); err != nil {
				return fmt.Errorf("create: mkdir %q: %w", p, err)
			}
		}
		fd, err := unix.Openat(dir, n, openDirFlags, 0)
		if err != nil {
			if i == 0 {
				return sourceChanged(p)
			}
			return fmt.Errorf("create: open %q: %w", p, err)
		}
		fds = append(fds, fd)
	}
	var opened unix.Stat_t
	if err := unix.Fstat(fds[0], &opened); err != nil || opened.Ino != st.Ino || opened.Dev != st.Dev {
		return sourceChanged(p)
	}
	if err := c.copyDir(fds[0], fds[1], fds[2], p); err != nil {
		return err
	}
	perm := uint32(st.Mode) & 0o777
	for i, dir := range []int{base, work} {
		if err := unix.Fchmod(fds[i+1], perm); err != nil {
			return fmt.Errorf("create: chmod %q: %w", p, err)
		}
		if err := setTimes(dir, n, st.Mtim.Nano()); err != nil {
			return fmt.Errorf("create: %q: %w", p, err)
		}
	}
	return nil
}

func (c *copier) copyFile(src, base, work int, n, p string, st *unix.Stat_t) error {
	if testHookCreateFile != nil {
		testHookCreateFile(p)
	}
	f, err := openFileAt(src, n, p)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, ErrChanged) {
			return sourceChanged(p)
		}
		return fmt.Errorf("create: %w", err)
	}
	defer f.Close()
	var opened, done unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &opened); err != nil || !sameVersion(st, &opened) {
		return sourceChanged(p)
	}
	for i, dir := range []int{base, work} {
		out, cloned, err := placeFile(f, dir, n, c.allowCopy, &c.memo[i])
		if err != nil {
			if !c.allowCopy && cloneUnsupported(err) {
				return cloneError(p, err)
			}
			return fmt.Errorf("create: %q: %w", p, err)
		}
		if i == 0 { // counts describe source-to-baseline files, as the seed's do
			if cloned {
				c.cloned.Add(1)
			} else {
				c.copied.Add(1)
			}
		}
		if err := finishFile(out, dir, n, uint32(st.Mode)&0o777, st.Mtim.Nano(), false); err != nil {
			return fmt.Errorf("create: %q: %w", p, err)
		}
	}
	if err := unix.Fstat(int(f.Fd()), &done); err != nil || !sameVersion(&opened, &done) {
		return sourceChanged(p)
	}
	return nil
}

// copyLink copies a symlink as a link; its target is never followed.
func copyLink(src, base, work int, n, p string) error {
	target, err := readlinkAt(src, n)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
		return sourceChanged(p)
	} else if err != nil {
		return fmt.Errorf("create: %q: %w", p, err)
	}
	for _, dir := range []int{base, work} {
		if err := unix.Symlinkat(target, dir, n); err != nil {
			return fmt.Errorf("create: symlink %q: %w", p, err)
		}
	}
	return nil
}

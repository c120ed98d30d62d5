package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
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

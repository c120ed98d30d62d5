// Package store implements autobox's persistent workspaces, the engine behind the
// copy_then_sync tool: create clones a host directory into a private baseline and a
// writable working tree, status compares the three trees, sync applies workspace edits
// to the host one file at a time, and discard deletes the copy.
//
// Every operation runs under one lock: a mutex within the process and flock on
// <StateDir>/operation.lock across processes, so a second autobox process sharing the
// state directory gets ErrBusy at once instead of waiting. Calls and sessions that
// mount a workspace hold that workspace's own lock instead, which sync, resolve and
// discard need too (wslock.go).
//
// Host and workspace trees are opened as directories and every later access walks
// beneath them one component at a time with O_NOFOLLOW, so a symlink swapped in while an
// operation runs cannot redirect a read or a write.
//
// Status and sync cost one scan of the working tree: the baseline is read from its
// manifest (a checked cache, see manifest.go), and only the host paths that can turn a
// workspace change into a conflict are looked at (see hostChanges). Sync stages the
// files it replaces a window at a time, in parallel, then applies them one by one.
package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/autobox-dev/autobox/policy"
)

// Sentinel errors callers branch on. Returned errors wrap them with a message that names
// the problem; test with errors.Is.
var (
	// ErrBusy: another autobox process holds the operation lock.
	ErrBusy = errors.New("workspace lock is held")
	// ErrNotFound: no workspace with that id in the state directory.
	ErrNotFound = errors.New("workspace not found")
	// ErrInvalid: the request itself is wrong (bad path, id, mode, exclude, file type).
	ErrInvalid = errors.New("invalid request")
	// ErrCloneUnsupported: copyMode "clone" was asked for but the filesystems cannot
	// clone (EXDEV across filesystems, EOPNOTSUPP without copy-on-write).
	ErrCloneUnsupported = errors.New("copy-on-write clone not possible")
	// ErrChanged: a tree changed under a create or sync (an external writer).
	ErrChanged = errors.New("changed during operation")
)

// detailError carries a complete human message while matching a sentinel (and the
// underlying cause, if any) with errors.Is.
type detailError struct {
	kind  error
	msg   string
	cause error
}

func (e *detailError) Error() string { return e.msg }

func (e *detailError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func invalidf(format string, a ...any) error {
	return &detailError{kind: ErrInvalid, msg: fmt.Sprintf(format, a...)}
}

func notFound(id string) error {
	return &detailError{kind: ErrNotFound, msg: fmt.Sprintf("workspace %s not found (no record in the state directory; was it discarded, or is AUTOBOX_STATE_DIR different?)", id)}
}

// Options configure a Store. The zero value uses the defaults documented per field.
type Options struct {
	// StateDir holds workspace records (<id>.json) and operation.lock. "" means
	// $AUTOBOX_STATE_DIR, else $XDG_STATE_HOME/autobox, else ~/.local/state/autobox
	// (macOS: ~/Library/Application Support/autobox).
	StateDir string
	// DefaultStorage is where workspaces go when create has no storagePath. "" means
	// $XDG_DATA_HOME/autobox-workspaces, else ~/.local/share/autobox-workspaces
	// (macOS: ~/Library/Application Support/autobox-workspaces).
	DefaultStorage string
	// WorkOwner, if set, is the uid and gid the commands that write workspaces run as,
	// when they are not this process's (a root server without namespaces runs them as
	// 65534): each working tree is given to them, and the directories above it (the
	// workspace's own, and the default storage) can be searched by them (owner.go).
	WorkOwner *Owner
}

// Store manages the workspaces recorded in one state directory. It is safe for
// concurrent use; operations wait for each other within the process and fail with
// ErrBusy when another process holds the lock.
type Store struct {
	stateDir       string
	defaultStorage string
	workOwner      *Owner
	lockPath       string
	sem            chan struct{} // in-process half of the operation lock
	held           holds         // this process's read-write mounts and workspace users (held.go)
	ws             wsLocks       // per-workspace locks (wslock.go)
}

// Workspace is what an execution needs to mount a workspace.
type Workspace struct {
	ID          string
	Source      string // canonical host source directory
	Work        string // writable working tree, mounted at SandboxPath
	SandboxPath string
	Storage     string // storage root; the workspace lives in Storage/ID
	CopyMode    string
	Excludes    []string
	Created     time.Time
}

// Summary describes one workspace for List.
type Summary struct {
	ID          string    `json:"workspaceId"`
	Source      string    `json:"hostPath"`
	SandboxPath string    `json:"sandboxPath"`
	Storage     string    `json:"storagePath"`
	Created     time.Time `json:"created"`
	CopyMode    string    `json:"copyMode"`
	SizeBytes   int64     `json:"sizeBytes"`       // space on disk of its baseline and working tree (see diskUsage)
	Dirty       bool      `json:"dirty"`           // the working tree has unsynced changes
	Error       string    `json:"error,omitempty"` // why Dirty could not be computed
	// Discarding: an earlier discard stopped part-way (discard.go); Error says to
	// discard it again.
	Discarding bool `json:"discarding,omitempty"`
}

// Open returns a Store over the state directory, creating it if needed.
func Open(opts Options) (*Store, error) {
	state, err := defaultDir(opts.StateDir, "AUTOBOX_STATE_DIR", "XDG_STATE_HOME", ".local/state", "autobox")
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	storage, err := defaultDir(opts.DefaultStorage, "", "XDG_DATA_HOME", ".local/share", "autobox-workspaces")
	if err != nil {
		return nil, fmt.Errorf("default storage: %w", err)
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	if state, err = filepath.EvalSymlinks(state); err != nil {
		return nil, fmt.Errorf("resolving state directory: %w", err)
	}
	return &Store{
		stateDir:       state,
		defaultStorage: canonicalMaybeMissing(storage),
		workOwner:      opts.WorkOwner,
		lockPath:       filepath.Join(state, "operation.lock"),
		sem:            make(chan struct{}, 1),
	}, nil
}

// defaultDir picks an explicit value, then an override variable, then an XDG variable
// (ignored on macOS, whose convention is Application Support), then a home-relative path.
func defaultDir(explicit, overrideEnv, xdgEnv, xdgFallback, name string) (string, error) {
	dir := explicit
	if dir == "" && overrideEnv != "" {
		dir = os.Getenv(overrideEnv)
	}
	if dir == "" && runtime.GOOS != "darwin" {
		// The XDG spec says relative values are invalid and must be ignored.
		if x := os.Getenv(xdgEnv); filepath.IsAbs(x) {
			dir = filepath.Join(x, name)
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory to derive a default from: %w", err)
		}
		if runtime.GOOS == "darwin" {
			dir = filepath.Join(home, "Library", "Application Support", name)
		} else {
			dir = filepath.Join(home, xdgFallback, name)
		}
	}
	if !filepath.IsAbs(dir) {
		return "", invalidf("%q is not an absolute path", dir)
	}
	return filepath.Clean(dir), nil
}

// canonicalMaybeMissing is policy.CanonicalMaybeMissing.
func canonicalMaybeMissing(p string) string { return policy.CanonicalMaybeMissing(p) }

// StateDir returns the canonical state directory.
func (s *Store) StateDir() string { return s.stateDir }

// DefaultStorage is where create puts a workspace without storagePath.
func (s *Store) DefaultStorage() string { return s.defaultStorage }

// Lookup returns a workspace by id without taking the operation lock, so an execution
// that already holds Lock can resolve its { workspaceId } mounts.
func (s *Store) Lookup(id string) (*Workspace, error) {
	rec, err := s.loadRecord(id)
	if err != nil {
		return nil, err
	}
	ws := rec.workspace()
	fi, err := os.Lstat(ws.Work)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: working tree: %w", id, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: working tree %s is not a directory", id, ws.Work)
	}
	return ws, nil
}

// ManagedPaths lists the directories autobox manages: the state directory, the default
// storage root and every storage root a record uses. Raw hostPath mounts that overlap
// any of them must be rejected; workspaces are mounted by id instead.
func (s *Store) ManagedPaths() []string {
	set := map[string]bool{s.stateDir: true, s.defaultStorage: true}
	recs, _ := s.loadRecords() // unreadable records name no storage; nothing to add
	going, _ := s.loadDiscarding()
	for _, r := range append(recs, going...) {
		set[r.Storage] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// List returns every workspace, sorted by creation time, with Dirty computed by
// comparing its baseline and working tree; those being discarded too, marked so.
func (s *Store) List(ctx context.Context) ([]Summary, error) {
	unlock, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := s.loadRecords()
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(recs))
	for _, r := range recs {
		sum := Summary{ID: r.ID, Source: r.Source, SandboxPath: r.SandboxPath, Storage: r.Storage, Created: r.Created, CopyMode: r.CopyMode, SizeBytes: diskUsage(filepath.Join(r.Storage, r.ID))}
		dirty, err := s.dirty(ctx, r)
		if err != nil {
			sum.Error = err.Error()
		}
		sum.Dirty = dirty
		out = append(out, sum)
	}
	going, err := s.loadDiscarding()
	if err != nil {
		return nil, err
	}
	for _, r := range going {
		out = append(out, Summary{ID: r.ID, Source: r.Source, SandboxPath: r.SandboxPath, Storage: r.Storage, Created: r.Created, CopyMode: r.CopyMode,
			SizeBytes: diskUsage(filepath.Join(r.Storage, r.ID)), Discarding: true, Error: discardingError(r.ID).Error()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

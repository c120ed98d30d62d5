package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
)

const recordVersion = 1

// record is the on-disk description of a workspace, <StateDir>/<id>.json. It is
// written last during create, so a record always names a complete workspace.
type record struct {
	Version     int       `json:"version"`
	ID          string    `json:"workspaceId"`
	Source      string    `json:"hostPath"`
	SandboxPath string    `json:"sandboxPath"`
	Storage     string    `json:"storagePath"`
	CopyMode    string    `json:"copyMode"`
	Excludes    []string  `json:"excludes"`
	Created     time.Time `json:"created"`
}

func (r *record) dir() string      { return filepath.Join(r.Storage, r.ID) }
func (r *record) baseline() string { return filepath.Join(r.dir(), "baseline") }
func (r *record) work() string     { return filepath.Join(r.dir(), "work") }

func (r *record) workspace() *Workspace {
	return &Workspace{
		ID: r.ID, Source: r.Source, Work: r.work(), SandboxPath: r.SandboxPath,
		Storage: r.Storage, CopyMode: r.CopyMode, Excludes: append([]string(nil), r.Excludes...),
		Created: r.Created,
	}
}

// validateID accepts only the canonical lowercase text of a version 4 UUID, so an id
// can be joined to a path without any chance of "..", "/" or a second spelling.
func validateID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 4 || u.String() != id {
		return invalidf("workspaceId %q is not a UUIDv4 as returned by create", id)
	}
	return nil
}

func (s *Store) recordPath(id string) string { return filepath.Join(s.stateDir, id+".json") }

// pendingPath marks a create in progress; if the creating process dies, the next
// operation finds it and removes the half-built workspace it names.
func (s *Store) pendingPath(id string) string { return filepath.Join(s.stateDir, id+".creating") }

// loadRecord reads the record of a whole workspace; one whose discard has begun
// is refused with ErrDiscarding (discard.go).
func (s *Store) loadRecord(id string) (*record, error) {
	if err := validateID(id); err != nil {
		return nil, err
	}
	r, err := s.readRecord(id, s.recordPath(id))
	if errors.Is(err, os.ErrNotExist) {
		if s.isDiscarding(id) {
			return nil, discardingError(id)
		}
		return nil, notFound(id)
	}
	return r, err
}

// readRecord reads and checks id's record at path.
func (s *Store) readRecord(id, path string) (*record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading workspace record: %w", err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("workspace record %s is corrupt: %w", path, err)
	}
	if r.ID != id || !filepath.IsAbs(r.Source) || !filepath.IsAbs(r.Storage) || r.Version != recordVersion {
		return nil, fmt.Errorf("workspace record %s is inconsistent (id %q, version %d)", path, r.ID, r.Version)
	}
	return &r, nil
}

// loadRecords returns every readable record of a whole workspace. Unreadable ones
// are skipped so one bad file does not hide the rest; Lookup of that id still
// reports why.
func (s *Store) loadRecords() ([]*record, error) {
	return s.readRecords(".json", s.recordPath)
}

// loadDiscarding returns the records of the workspaces being discarded.
func (s *Store) loadDiscarding() ([]*record, error) {
	return s.readRecords(".discarding", s.discardingPath)
}

func (s *Store) readRecords(suffix string, pathOf func(string) string) ([]*record, error) {
	ents, err := os.ReadDir(s.stateDir)
	if err != nil {
		return nil, fmt.Errorf("listing workspace records: %w", err)
	}
	var out []*record
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), suffix)
		if !ok || validateID(id) != nil {
			continue
		}
		if r, err := s.readRecord(id, pathOf(id)); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *Store) saveRecord(r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding workspace record: %w", err)
	}
	if err := writeFileAtomic(s.recordPath(r.ID), data); err != nil {
		return fmt.Errorf("writing workspace record: %w", err)
	}
	return nil
}

// writeFileAtomic replaces path with data so that readers see the old or the new
// content, never a partial file, even across a crash.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

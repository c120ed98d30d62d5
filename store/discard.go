package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Discarding a workspace, safe at every instant.
//
// Deleting a workspace's storage takes one unlink per file, and a kill or a
// failure can stop it anywhere. A record that still named a half-deleted
// storage would answer as if whole: status would list a wrong change set. So a
// discard first renames the record, <id>.json to <id>.discarding (one rename:
// it needs no free space, and a crash leaves one name or the other), then
// deletes the storage, then the record:
//
//	before the rename: the workspace is whole, and nothing was deleted
//	after it:          the workspace is being discarded: every operation on it
//	                   (status, sync, resolve, merge, a call that mounts it) is
//	                   refused with ErrDiscarding, which says to discard it
//	                   again, and list shows it so; discard finishes the job
//	record removed:    the workspace is gone (ErrNotFound)
//
// The source is never touched.

// ErrDiscarding: the workspace is being discarded (an earlier discard stopped
// part-way); only discard works on it.
var ErrDiscarding = errors.New("workspace is being discarded")

// DiscardResult is the discard response.
type DiscardResult struct {
	OK          bool   `json:"ok"`
	WorkspaceID string `json:"workspaceId"`
}

// discardingPath is a workspace's record once its discard has begun.
func (s *Store) discardingPath(id string) string { return filepath.Join(s.stateDir, id+".discarding") }

func discardingError(id string) error {
	return &detailError{kind: ErrDiscarding, msg: fmt.Sprintf(
		"workspace %s is being discarded: an earlier discard stopped part-way, so part of its storage may be deleted already and nothing it holds can be trusted. "+
			"Run copy_then_sync action \"discard\" on it again to finish; its source was never touched", id)}
}

// isDiscarding reports whether id's discard has begun and not finished.
func (s *Store) isDiscarding(id string) bool {
	_, err := os.Lstat(s.discardingPath(id))
	return err == nil
}

// Discard deletes the workspace storage and record. It never touches the source.
// It also finishes a discard that stopped part-way.
func (s *Store) Discard(ctx context.Context, id string) (*DiscardResult, error) {
	unchange, err := s.change(ctx, id, "discard")
	if err != nil {
		return nil, err
	}
	defer unchange()
	unlock, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := s.loadRecord(id)
	switch {
	case errors.Is(err, ErrDiscarding):
		if rec, err = s.readRecord(id, s.discardingPath(id)); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if err := step("discard mark"); err != nil {
			return nil, s.discardError(id, "marking it as being discarded", err, false)
		}
		if err := os.Rename(s.recordPath(id), s.discardingPath(id)); err != nil {
			return nil, s.discardError(id, "marking it as being discarded", err, false)
		}
		if err := syncDir(s.stateDir); err != nil {
			return nil, s.discardError(id, "marking it as being discarded", err, true)
		}
	}
	if err := removeStorage(rec); err != nil {
		return nil, s.discardError(id, "deleting its storage", err, true)
	}
	if err := step("discard record"); err != nil {
		return nil, s.discardError(id, "removing its record", err, true)
	}
	if err := os.Remove(s.discardingPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, s.discardError(id, "removing its record", err, true)
	}
	s.dropWorkspaceLock(id)
	return &DiscardResult{OK: true, WorkspaceID: id}, nil
}

// discardError says where a discard of id stopped and what it left: nothing
// changed (begun false), or a workspace being discarded.
func (s *Store) discardError(id, doing string, err error, begun bool) error {
	left := "nothing was deleted and the workspace is whole"
	if begun {
		left = "the workspace is marked as being discarded (no operation but discard works on it); run discard again to finish"
	}
	if se := spaceInPath(s.stateDir, roleState, err); se != nil {
		err = se
	}
	return fmt.Errorf("discarding workspace %s stopped while %s: %w; %s", id, doing, err, left)
}

// removeStorage deletes a workspace's storage, <storage>/<id>: the working tree
// and the baseline one top-level entry at a time (a step each, for the tests'
// kills), then the rest.
func removeStorage(rec *record) error {
	dir, err := openRoot(rec.Storage)
	if err != nil {
		return fmt.Errorf("opening storage %s: %w", rec.Storage, err)
	}
	defer dir.Close()
	for _, part := range []string{"work", "baseline"} {
		fd, err := unix.Openat(dir.fd, rec.ID+"/"+part, openDirFlags, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("opening %s: %w", filepath.Join(rec.dir(), part), err)
		}
		// A copied read-only tree cannot be emptied by its non-root owner
		// otherwise (removeAllAt opens up what it enters, not the top).
		unix.Fchmod(fd, 0o700)
		names, err := readNames(fd)
		for _, n := range names {
			if err == nil {
				err = step("discard remove " + part + "/" + n)
			}
			if err == nil {
				err = removeAllAt(fd, n)
			}
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("deleting %s: %w", filepath.Join(rec.dir(), part), err)
		}
	}
	if err := step("discard remove rest"); err != nil {
		return err
	}
	if err := removeAllAt(dir.fd, rec.ID); err != nil {
		return fmt.Errorf("deleting %s: %w", rec.dir(), err)
	}
	return nil
}

package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// Recording a resolve or a merge, safe at every instant.
//
// A merge writes the merged text into the working tree and makes the host's
// version the baseline of each path it merged cleanly; a resolve does the
// latter alone. Path by path, a kill between the two left merged paths listed
// as conflicts; a temporary file beside the working-tree file it replaces was
// left where status looks (and sync copied it to the host). So both are
// written first into a journal directory in the workspace's storage,
// <storage>/<id>/journal-<random>, out of every tree status reads:
//
//	1. staged: each merged file, and each host version the baseline takes (a
//	   copy of the host's file as planned, or a link), under numbered names
//	2. commit: journal.json, which lists per path what to put where, renamed
//	   into place and flushed
//	3. applied: per path, the merged file renamed over the working tree's (if
//	   that is still as planned), then the baseline's entries renamed in
//	4. the journal directory is removed
//
// Killed before the commit, nothing changed, and the next operation removes
// the directory. Killed after it, the next operation (any: it runs before
// anything reads the trees, under the operation lock) finishes the journal:
// each path whose working-tree file was already replaced (its staged file is
// gone) gets its baseline, which no call can write; a path whose file was not
// replaced yet is left as it was before the merge, a conflict, because
// replacing it now could overwrite what a call wrote since. Every path is
// therefore merged and resolved, or untouched; never merged and still listed as
// a conflict. A resolve (no working-tree files) is applied whole.

// journalName is the commit record in a journal directory.
const journalName = "journal.json"

// journalDirs matches the journal directories in a workspace's storage.
var journalDirs = lazyre.New(`^journal-[0-9a-f]{16}$`)

// journalEntry is what a resolve or merge does to one path.
type journalEntry struct {
	Path string `json:"path"`
	// Work is the staged name of the working tree's new file ("": none).
	Work string `json:"work,omitempty"`
	// Rebase: the host's version becomes the path's baseline: Dirs are the
	// baseline directories above it to make (as the host has them), then Base
	// (the staged entry) is renamed in, or with Remove the baseline's entry is
	// removed (the host has none).
	Rebase bool         `json:"rebase,omitempty"`
	Dirs   []journalDir `json:"dirs,omitempty"`
	Base   string       `json:"base,omitempty"`
	Remove bool         `json:"remove,omitempty"`
}

// valid reports whether e names paths beneath the trees and staged names
// inside the journal directory only (it is autobox's own file, in storage no
// call can write; checked all the same).
func (e *journalEntry) valid() bool {
	ok := cleanRel(e.Path) && stagedName(e.Work) && stagedName(e.Base)
	for _, d := range e.Dirs {
		ok = ok && cleanRel(d.Path)
	}
	return ok
}

// stagedName reports whether n is "" or a name stageDir.next gives.
func stagedName(n string) bool {
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(n) < 12
}

type journalDir struct {
	Path string `json:"path"`
	Perm uint32 `json:"perm"`
}

type journalFile struct {
	Action  string         `json:"action"`
	Entries []journalEntry `json:"entries"`
}

// commitJournal writes the journal's commit record: after it, the journal is
// finished by whoever comes next (recoverJournals).
func commitJournal(st *stageDir, jf *journalFile) error {
	b, err := json.Marshal(jf)
	if err != nil {
		return err
	}
	if err := step(jf.Action + " commit"); err != nil {
		return err
	}
	tmp := st.next()
	if err := writeNote(st.fd, tmp, string(b)); err != nil {
		unix.Unlinkat(st.fd, tmp, 0)
		return err
	}
	if err := unix.Renameat(st.fd, tmp, st.fd, journalName); err != nil {
		return err
	}
	return unix.Fsync(st.fd)
}

// baseApplier puts journal entries into a baseline.
type baseApplier struct {
	a   *applier // for inBaseline
	jfd int      // the journal directory
}

// rebase makes e's baseline entries the host's version, as staged. Every step
// can be done again: a directory there is kept, a staged entry already
// renamed in is gone.
func (b *baseApplier) rebase(action string, e *journalEntry) error {
	for _, d := range e.Dirs {
		err := b.a.inBaseline(d.Path, func(pfd int, name string) error {
			cur, ok, err := lstatAt(pfd, name)
			if err != nil {
				return err
			}
			if ok && !cur.isDir() {
				if err := removeAllAt(pfd, name); err != nil {
					return err
				}
				ok = false
			}
			if !ok {
				if err := unix.Mkdirat(pfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
					return &os.PathError{Op: "mkdir", Path: name, Err: err}
				}
			}
			return fchmodDirAt(pfd, name, d.Perm)
		})
		if err != nil {
			return err
		}
	}
	if err := step(action + " base " + e.Path); err != nil {
		return inUserWords(b.a.o.base, e.Path, "updating baseline %s", err)
	}
	return b.a.inBaseline(e.Path, func(pfd int, name string) error {
		if e.Remove {
			return removeAllAt(pfd, name)
		}
		if _, ok, err := lstatAt(b.jfd, e.Base); err != nil || !ok {
			return err // renamed in already
		}
		if cur, ok, err := lstatAt(pfd, name); err != nil {
			return err
		} else if ok && cur.isDir() { // rename cannot swap a directory for a file
			if err := removeAllAt(pfd, name); err != nil {
				return err
			}
		}
		if err := unix.Renameat(b.jfd, e.Base, pfd, name); err != nil {
			return &os.PathError{Op: "rename", Path: name, Err: err}
		}
		return nil
	})
}

// recoverJournals finishes the journals a killed resolve or merge left in
// rec's storage (see above), and removes them. One that cannot be finished
// now is kept for the next operation.
func recoverJournals(rec *record) {
	dir, err := openRoot(rec.dir())
	if err != nil {
		return
	}
	defer dir.Close()
	names, _ := readNames(dir.fd)
	for _, n := range names {
		if !journalDirs().MatchString(n) {
			continue
		}
		if recoverJournal(rec, dir, n) == nil {
			removeAllAt(dir.fd, n)
		}
	}
}

func recoverJournal(rec *record, dir *root, name string) error {
	jfd, err := unix.Openat(dir.fd, name, openDirFlags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(jfd)
	f, err := openFileAt(jfd, journalName, journalName)
	if errors.Is(err, unix.ENOENT) {
		return nil // not committed: nothing was changed
	}
	if err != nil {
		return err
	}
	var jf journalFile
	err = json.NewDecoder(f).Decode(&jf)
	f.Close()
	if err != nil {
		return nil // cannot be a commit record (it is renamed in whole): nothing to do
	}
	base, err := openRoot(rec.baseline())
	if err != nil {
		return err
	}
	defer base.Close()
	base.role = roleStorage
	if err := dropManifest(dir); err != nil {
		return err
	}
	b := &baseApplier{a: &applier{o: &opened{base: base}}, jfd: jfd}
	for i := range jf.Entries {
		e := &jf.Entries[i]
		if e.Work != "" {
			if _, staged, err := lstatAt(jfd, e.Work); err != nil || staged {
				continue // the working tree's file was not replaced: the path stays as it was
			}
		}
		if !e.Rebase || !e.valid() {
			continue
		}
		if err := b.rebase(jf.Action, e); err != nil {
			return fmt.Errorf("finishing the %s of %s in %s: %w", jf.Action, e.Path, filepath.Join(rec.dir(), name), err)
		}
	}
	return nil
}

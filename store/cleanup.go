package store

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/autobox-dev/autobox/internal/lazyre"
)

// cleanup removes what crashed operations left behind: half-built workspaces (marked by
// <id>.creating), the temporary files of a killed atomic write of a record or marker
// (.<id>.json.tmp-*, .<id>.creating.tmp-*), baseline staging (<storage>/<id>/stage-*) and host staging
// (<source>/.autobox-sync-*), and it finishes the journals of killed resolves and
// merges (<storage>/<id>/journal-*, journal.go). It runs at the start of every
// operation, under the lock, so no live operation can own them, and before
// anything reads a tree. Failures are ignored: status never reports leftovers, and
// the next operation tries again.
func (s *Store) cleanup() {
	ents, _ := os.ReadDir(s.stateDir)
	for _, e := range ents {
		if m := stateTemp().FindStringSubmatch(e.Name()); m != nil && validateID(m[1]) == nil {
			// Only a process holding the lock writes these, so none is live now.
			os.Remove(filepath.Join(s.stateDir, e.Name()))
			continue
		}
		id, ok := strings.CutSuffix(e.Name(), ".creating")
		if !ok || validateID(id) != nil {
			continue
		}
		pending := s.pendingPath(id)
		// A record means the create finished and only the marker's removal was lost.
		if _, err := os.Stat(s.recordPath(id)); errors.Is(err, os.ErrNotExist) && !s.isDiscarding(id) {
			if storage, err := os.ReadFile(pending); err == nil && filepath.IsAbs(string(storage)) {
				if removeBelow(string(storage), id) != nil {
					continue // keep the marker so the next operation retries
				}
			}
		}
		os.Remove(pending)
	}
	recs, _ := s.loadRecords()
	for _, r := range recs {
		recoverJournals(r)
		removeMatching(r.dir(), baseStaging())
		if src, err := openRoot(r.Source); err == nil {
			names, _ := readNames(src.fd)
			for _, n := range names {
				if hostStaging().MatchString(n) {
					restoreAsides(src, n)
				}
			}
			src.Close()
		}
		removeMatching(r.Source, hostStaging())
	}
}

// stateTemp matches writeFileAtomic's temporary files in the state directory.
var stateTemp = lazyre.New(`^\.(.+)\.(?:json|creating)\.tmp-[0-9]+$`)

// removeMatching deletes the entries of dir whose names match re.
func removeMatching(dir string, re *regexp.Regexp) {
	r, err := openRoot(dir)
	if err != nil {
		return
	}
	defer r.Close()
	names, _ := readNames(r.fd)
	for _, n := range names {
		if re.MatchString(n) {
			removeAllAt(r.fd, n)
		}
	}
}

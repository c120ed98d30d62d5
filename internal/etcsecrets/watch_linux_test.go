//go:build linux

package etcsecrets

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchStartsAfterFirstSecond: a scanner's first walk watches nothing (a
// command line's one call pays for no inotify watches); the first call a
// second later starts watching, and a change below root then marks the list
// for a new walk at once, without waiting out the second.
func TestWatchStartsAfterFirstSecond(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := New(root)
	s.Hidden()
	s.mu.Lock()
	ino := s.ino
	s.walked = s.walked.Add(-2 * time.Second) // as if a second had passed
	s.mu.Unlock()
	if ino >= 0 {
		t.Fatal("the first walk started watching")
	}
	s.Hidden()
	s.mu.Lock()
	watched, dirty, n := s.watched, s.dirty, len(s.wd)
	s.mu.Unlock()
	if !watched || dirty || n != 2 {
		t.Fatalf("after a second: watched %v, dirty %v, %d directories watched (want true, false, 2)", watched, dirty, n)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "key"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		dirty = s.dirty
		s.mu.Unlock()
		if dirty {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a file made below root did not mark the list for a new walk")
		}
	}
	if got := s.Hidden(); len(got) != 1 || got[0] != filepath.Join(root, "sub", "key") {
		t.Errorf("hidden after the change: %v", got)
	}
}

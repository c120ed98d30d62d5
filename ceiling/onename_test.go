package ceiling

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReadFileOneName: a ceiling file with a second name is not read; with
// one name again (the other removed), it is.
func TestReadFileOneName(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(p, []byte(`{"allowNetwork": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, filepath.Join(dir, "other.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(p); !errors.Is(err, ErrHardLinked) {
		t.Errorf("a file of two names: %v", err)
	}
	// Through a symbolic link (home-manager's layout), the same.
	if err := os.Symlink(p, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadFile(filepath.Join(dir, "link.json")); !errors.Is(err, ErrHardLinked) {
		t.Errorf("a file of two names through a symbolic link: %v", err)
	}
	os.Remove(filepath.Join(dir, "other.json"))
	if f, exists, err := ReadFile(p); err != nil || !exists || f.AllowNetwork == nil || *f.AllowNetwork {
		t.Errorf("a file of one name: %+v %v %v", f, exists, err)
	}
}

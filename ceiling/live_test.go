package ceiling

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// look makes the next Current look at the file, as it does once a second.
func (l *Live) look() *Ceiling {
	l.mu.Lock()
	l.checked = time.Time{}
	l.mu.Unlock()
	return l.Current()
}

func TestLiveReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"limits": {"timeoutMs": 1000}}`)
	var log bytes.Buffer // written by Current, on this goroutine
	l, err := NewLive(&Flags{File: path, Limits: Limits{MemoryMb: 64}}, nil, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if c := l.Current(); c.Limits.TimeoutMs != 1000 || c.Limits.MemoryMb != 64 {
		t.Fatalf("at start: %+v", c.Limits)
	}
	// Changed: the new rules, the flag's kept.
	write(`{"limits": {"timeoutMs": 2000, "memoryMb": 512}}`)
	if c := l.look(); c.Limits.TimeoutMs != 2000 || c.Limits.MemoryMb != 64 || l.Broken() != nil {
		t.Errorf("after a change: %+v %v", c.Limits, l.Broken())
	}
	// Broken: the last ceiling stays, and the log names the file.
	write(`{"limits": {"timeoutMs": 3000},`)
	if c := l.look(); c.Limits.TimeoutMs != 2000 {
		t.Errorf("a broken file replaced the ceiling: %+v", c.Limits)
	}
	if err := l.Broken(); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Broken: %v", err)
	}
	if s := log.String(); !strings.Contains(s, "the ceiling file no longer reads") || !strings.Contains(s, path) {
		t.Errorf("the log: %s", s)
	}
	// Removed: the same.
	os.Remove(path)
	if c := l.look(); c.Limits.TimeoutMs != 2000 || l.Broken() == nil {
		t.Errorf("a removed file: %+v %v", c.Limits, l.Broken())
	}
	// An "always" (Update, a rename): read whole.
	if err := Update(path, func(f *File) { EditReach(f, "example.com:8443") }); err != nil {
		t.Fatal(err)
	}
	if c := l.look(); c.Limits.TimeoutMs != 0 || !c.Reaches(nil, "example.com", 8443) || c.Reaches(nil, "example.com", 443) || l.Broken() != nil {
		t.Errorf("after Update: %+v %v %v", c.Limits, c.ReachEntries(nil), l.Broken())
	}
	// Unchanged: the same ceiling, not read again.
	if c1, c2 := l.look(), l.look(); c1 != c2 {
		t.Error("an unchanged file was read again")
	}
}

package store

import (
	"slices"
	"strings"
	"testing"
)

// Once a call's or a session's hold of a read-write mount is released, a
// create there is not refused by this process, and a session's release is on
// disk for other processes by the time it returns (issue 32, item 7).
func TestReleasedMountsAreFreeAtOnce(t *testing.T) {
	e := newEnv(t)
	for _, session := range []bool{false, true} {
		dir := t.TempDir()
		release, err := e.s.HoldWritable([]string{dir}, session)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.s.checkStorage(dir + "/ws"); err == nil || !strings.Contains(err.Error(), "a running call or session") {
			t.Fatalf("session %v: storage in a held mount: %v", session, err)
		}
		release()
		if err := e.s.checkStorage(dir + "/ws"); err != nil {
			t.Fatalf("session %v: storage in a released mount: %v", session, err)
		}
		if !session {
			continue
		}
		files, err := e.s.readHeld(true)
		if err != nil {
			t.Fatal(err)
		}
		for _, hf := range files {
			if slices.Contains(hf.RW, dir) {
				t.Fatalf("a session's released mount is still registered on disk: %v", hf.RW)
			}
		}
	}
}

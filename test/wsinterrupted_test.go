//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIInterruptedDiscard (issue 32, item 2): a workspace whose discard
// stopped part-way (its record renamed, part of its storage gone, as a kill
// leaves it) says so on the command line, with the command that finishes it,
// and that command does. The store's tests kill a discard at each of its steps;
// this checks the words a user reads.
func TestCLIInterruptedDiscard(t *testing.T) {
	h := newCLIHome(t)
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "a.txt"), "a\n")
	writeFile(t, filepath.Join(src, "d", "b.txt"), "b\n")
	r := h.run("", "ws", "create", "--copy-mode", "auto", src, "/mnt/src")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("ws create: %s", r)
	}
	h.want(h.run("", "ws", "status", id), 0, "no changes", "")
	// What a discard killed after its first deletions leaves.
	if err := os.Rename(filepath.Join(h.state, id+".json"), filepath.Join(h.state, id+".discarding")); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(h.dir, "data", "autobox-workspaces", id, "work", "d"))
	for _, args := range [][]string{{"ws", "status", id}, {"ws", "sync", id}, {"exec", "--workspace", id, "--", "true"}} {
		h.want(h.run("", args...), 125, "", "is being discarded")
		h.want(h.run("", args...), 125, "", "autobox ws discard "+id)
	}
	h.want(h.run("", "ws", "list"), 0, "being discarded (an earlier discard stopped part-way): autobox ws discard "+id+" finishes it", "")
	h.want(h.run("", "ws", "list", "--json"), 0, `"discarding":true`, "")
	h.want(h.run("", "ws", "discard", id), 0, "discarded "+id, "")
	h.want(h.run("", "ws", "status", id), 125, "", "not found")
	if _, err := os.Stat(filepath.Join(h.dir, "data", "autobox-workspaces", id)); !os.IsNotExist(err) {
		t.Errorf("storage left after the discard finished: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(src, "a.txt")); string(got) != "a\n" {
		t.Errorf("the source changed: %q", got)
	}
}

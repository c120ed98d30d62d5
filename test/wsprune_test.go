//go:build linux

package test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIWorkspacePrune: ws list shows each workspace's size on disk; ws prune
// --older-than discards the old ones, keeps (and names) those with unsynced
// changes unless --include-unsynced, and --dry-run discards nothing.
func TestCLIWorkspacePrune(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "data.bin"), strings.Repeat("x", 200<<10))
	var ids []string
	for i := 0; i < 2; i++ {
		r := h.run("", "ws", "create", "--copy-mode", "auto", src, "/mnt/p")
		if r.code != 0 {
			t.Fatalf("create: %s", r)
		}
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	clean, dirty := ids[0], ids[1]
	h.want(h.run("", "exec", "--workspace", dirty, "--cwd", "/mnt/p", "--", "sh", "-c", "echo new > new.txt"), 0, "", "")
	r := h.run("", "ws", "list", "--json")
	var list []struct {
		ID        string `json:"workspaceId"`
		SizeBytes int64  `json:"sizeBytes"`
		CopyMode  string `json:"copyMode"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 || list[0].SizeBytes < 200<<10 || list[0].CopyMode != "auto" {
		t.Errorf("list --json: %v %s", err, r)
	}
	h.want(h.run("", "ws", "list"), 0, "SIZE", "")

	h.want(h.run("", "ws", "prune", "--older-than", "1d"), 0, "", "no workspace is older than 24h0m0s")
	h.want(h.run("", "ws", "prune", "--older-than", "0s", "--dry-run"), 0, "kept "+clean, "")
	r = h.run("", "ws", "prune", "--older-than", "0s")
	if r.code != 0 || !strings.Contains(r.stdout, "discarded "+clean) || !strings.Contains(r.stdout, "kept "+dirty) || !strings.Contains(r.stdout, "it has unsynced changes") {
		t.Errorf("prune: %s", r)
	}
	h.want(h.run("", "ws", "status", clean), 125, "", "not found")
	h.want(h.run("", "ws", "status", dirty), 0, "new.txt", "")
	h.want(h.run("", "ws", "prune", "--older-than", "0s", "--include-unsynced"), 0, "discarded "+dirty, "freed")
	h.want(h.run("", "ws", "list"), 0, "", "no workspaces")
	h.want(h.run("", "ws", "prune"), 2, "", "prune needs --older-than")
	h.want(h.run("", "ws", "list", "--dry-run"), 2, "", "--dry-run is for prune only")
}

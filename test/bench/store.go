package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/internal/treegen"
	"github.com/autobox-dev/autobox/internal/xfstest"
)

func init() { register("store", benchStore) }

const (
	storeFiles = 10000
	storeBytes = 100 << 20
	storeRuns  = 7
)

// benchStore sets copy_then_sync on a 10,000-file / 100 MB tree on a reflink XFS
// beside the tools a user would compare it with: create vs cp -a --reflink=auto,
// status with no changes vs git status, and a sync of 10 changed files.
func benchStore(ctx context.Context, _ string, cs *mcp.ClientSession, _ int, rep *report) {
	dir, err := os.MkdirTemp("", "autobox-bench-store-")
	check(err)
	defer os.RemoveAll(dir)
	mnt, unmount, err := xfstest.MountXFS(dir, 2<<30)
	note := "reflink XFS"
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: no reflink XFS (", err, "): measuring on", dir, "with copyMode auto")
		mnt, unmount, note = dir, func() error { return nil }, "no reflink: copyMode auto"
	}
	defer unmount()
	src, storage := filepath.Join(mnt, "src"), filepath.Join(mnt, "storage")
	check(os.MkdirAll(storage, 0o755))
	check(treegen.Generate(src, storeFiles, storeBytes))
	mode := "clone"
	if note != "reflink XFS" {
		mode = "auto"
	}
	call := func(args map[string]any) map[string]any {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "copy_then_sync", Arguments: args})
		check(err)
		var out map[string]any
		raw, _ := json.Marshal(res.StructuredContent)
		check(json.Unmarshal(raw, &out))
		if res.IsError {
			check(fmt.Errorf("copy_then_sync %v: %s", args["action"], raw))
		}
		return out
	}
	var create, cp []time.Duration
	var id string
	for i := 0; i < storeRuns; i++ {
		if id != "" {
			call(map[string]any{"action": "discard", "workspaceId": id})
		}
		t := time.Now()
		out := call(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": storage, "copyMode": mode})
		create = append(create, time.Since(t))
		id = out["workspaceId"].(string)
		dst := filepath.Join(mnt, fmt.Sprintf("cp-%d", i))
		t = time.Now()
		check(exec.Command("cp", "-a", "--reflink=auto", src, dst).Run())
		cp = append(cp, time.Since(t))
		os.RemoveAll(dst)
	}
	c, p := stats("copy_then_sync create (10k files, 100 MB)", create, note), stats("cp -a --reflink=auto of the same tree", cp, "baseline")
	rep.Cases = append(rep.Cases, c, p)
	rep.Numbers["create / cp ratio"] = c.P50 / p.P50

	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", src, "-c", "user.email=b@b", "-c", "user.name=b", "-c", "gc.auto=0"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			check(fmt.Errorf("git %v: %v: %s", args, err, out))
		}
	}
	// The repository is made after the workspace, so the workspace holds no .git;
	// status and git status alternate, so both meet the same machine load.
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "bench")
	git("status", "--porcelain") // warm the index
	var status, gitStatus []time.Duration
	for i := 0; i < storeRuns; i++ {
		t := time.Now()
		call(map[string]any{"action": "status", "workspaceId": id})
		status = append(status, time.Since(t))
		t = time.Now()
		git("status", "--porcelain")
		gitStatus = append(gitStatus, time.Since(t))
	}
	st, gs := stats("copy_then_sync status, no changes", status, ""), stats("git status on the same tree", gitStatus, "baseline")
	rep.Cases = append(rep.Cases, st, gs)
	rep.Numbers["status / git status ratio"] = st.P50 / gs.P50

	// git wrote .git into the source: a fresh workspace so status sees only our edits.
	call(map[string]any{"action": "discard", "workspaceId": id})
	id = call(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/src", "storagePath": storage, "copyMode": mode, "excludes": []string{".git"}})["workspaceId"].(string)
	var syncs []time.Duration
	for i := 0; i < storeRuns; i++ {
		work := filepath.Join(storage, id, "work")
		changed := 0
		check(filepath.WalkDir(work, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && changed < 10 {
				changed++
				return os.WriteFile(p, []byte(fmt.Sprintf("run %d edit %d", i, changed)), 0o644)
			}
			return err
		}))
		t := time.Now()
		out := call(map[string]any{"action": "sync", "workspaceId": id})
		syncs = append(syncs, time.Since(t))
		if ap, _ := out["applied"].([]any); len(ap) != 10 {
			check(fmt.Errorf("sync applied %d changes, want 10", len(ap)))
		}
	}
	rep.Cases = append(rep.Cases, stats("copy_then_sync sync of 10 changed files", syncs, note))
	call(map[string]any{"action": "discard", "workspaceId": id})
}

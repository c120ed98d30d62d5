package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type wsOut struct {
	OK          bool   `json:"ok"`
	WorkspaceID string `json:"workspaceId"`
	Mount       struct {
		WorkspaceID string `json:"workspaceId"`
	} `json:"mount"`
	SandboxPath string `json:"sandboxPath"`
	ClonedFiles int    `json:"clonedFiles"`
	CopiedFiles int    `json:"copiedFiles"`
	CopyMode    string `json:"copyMode"`
	CopiedBy    string `json:"copiedBy"`
	Changes     []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	} `json:"changes"`
	Conflicts []json.RawMessage `json:"conflicts"`
	Applied   []string          `json:"applied"`
	// status, sync, resolve, merge (wsreview_test.go)
	Diff          string `json:"diff"`
	DiffTruncated bool   `json:"diffTruncated"`
	Pending       []struct {
		Path string `json:"path"`
	} `json:"pending"`
	Resolved   []string `json:"resolved"`
	Merged     []string `json:"merged"`
	Conflicted []struct {
		Path  string `json:"path"`
		Lines []int  `json:"lines"`
	} `json:"conflicted"`
	Next  string `json:"next"`
	Error string `json:"error"`
}

func (s *session) ws(args map[string]any) (wsOut, bool) {
	s.t.Helper()
	var o wsOut
	isErr := s.call("copy_then_sync", args, &o)
	return o, isErr
}

// TestWorkspaceFlow is the seed's example workflow end to end: create, edit from JS
// and from a shell command, status, sync, discard — with the source untouched until sync.
func TestWorkspaceFlow(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "hello.txt"), "hello\n")
	writeFile(t, filepath.Join(src, "node_modules", "big.js"), "excluded")
	writeFile(t, filepath.Join(src, "gone.txt"), "delete me")
	storage := t.TempDir()

	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/project", "storagePath": storage, "copyMode": "auto", "excludes": []string{"node_modules"}})
	if isErr || !c.OK || c.WorkspaceID == "" || c.Mount.WorkspaceID != c.WorkspaceID || c.SandboxPath != "/mnt/project" || c.ClonedFiles+c.CopiedFiles != 2 {
		t.Fatalf("create: isError=%v %+v", isErr, c)
	}
	// The result says which copy mode was used, and what auto chose.
	if want := map[bool]string{true: "clone", false: "copy"}[c.ClonedFiles == 2]; c.CopyMode != "auto" || c.CopiedBy != want {
		t.Errorf("create: copyMode %q, copiedBy %q; want auto, %s", c.CopyMode, c.CopiedBy, want)
	}
	mount := []map[string]any{{"workspaceId": c.WorkspaceID}}

	s.mustJS(map[string]any{"code": "await host.writeFile('/mnt/project/new.txt', 'from js'); return host.listDir('/mnt/project')", "mounts": mount})
	o, _ := s.exec(map[string]any{"command": bash("printf 'updated\\n' > hello.txt && rm gone.txt && cat new.txt"), "cwd": "/mnt/project", "mounts": mount})
	if o.code() != 0 || o.Stdout != "from js" {
		t.Fatalf("edit via exec_command: %+v", o)
	}
	// The shell cannot write the workspace's source directly, even knowing its path.
	o, _ = s.exec(map[string]any{"command": bash("echo x > " + filepath.Join(src, "hello.txt")), "mounts": mount})
	if o.code() == 0 {
		t.Errorf("a shell wrote the source of a mounted workspace")
	}
	if got := readFile(t, filepath.Join(src, "hello.txt")); got != "hello\n" {
		t.Fatalf("source changed before sync: %q", got)
	}

	st, isErr := s.ws(map[string]any{"action": "status", "workspaceId": c.WorkspaceID})
	var got []string
	for _, ch := range st.Changes {
		got = append(got, ch.Path+":"+ch.Action)
	}
	if isErr || !st.OK || strings.Join(got, ",") != "gone.txt:delete,hello.txt:modify,new.txt:add" || len(st.Conflicts) != 0 {
		t.Fatalf("status: isError=%v %+v", isErr, st)
	}
	// Creation fields are rejected on status/sync/discard.
	if res := s.callRaw("copy_then_sync", map[string]any{"action": "sync", "workspaceId": c.WorkspaceID, "hostPath": src}); !res.IsError || !strings.Contains(errorOf(res), "sync takes workspaceId, paths, includeIgnored, not hostPath; hostPath, sandboxPath, storagePath, copyMode and excludes are fixed at create") {
		t.Errorf("sync with hostPath: %s", textOf(res))
	}

	sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID})
	if isErr || !sy.OK || len(sy.Applied) != 3 {
		t.Fatalf("sync: isError=%v %+v", isErr, sy)
	}
	if readFile(t, filepath.Join(src, "hello.txt")) != "updated\n" || readFile(t, filepath.Join(src, "new.txt")) != "from js" {
		t.Errorf("sync did not apply")
	}
	if _, err := os.Stat(filepath.Join(src, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt still on the host")
	}
	if readFile(t, filepath.Join(src, "node_modules", "big.js")) != "excluded" {
		t.Errorf("excluded path touched")
	}

	// A conflict: both sides edit the same file → ok:false, nothing applied.
	s.mustJS(map[string]any{"code": "host.writeFile('/mnt/project/hello.txt', 'workspace edit')", "mounts": mount})
	writeFile(t, filepath.Join(src, "hello.txt"), "host edit")
	sy, isErr = s.ws(map[string]any{"action": "sync", "workspaceId": c.WorkspaceID})
	if !isErr || sy.OK || len(sy.Conflicts) != 1 || len(sy.Applied) != 0 {
		t.Errorf("conflicting sync: isError=%v %+v", isErr, sy)
	}
	if readFile(t, filepath.Join(src, "hello.txt")) != "host edit" {
		t.Errorf("conflicting sync changed the host")
	}

	// Storage cannot be mounted raw, nor anything holding it read-write; a read-only
	// mount of a directory that holds it (a home directory, say) is fine.
	s.wantJSError(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": storage, "sandboxPath": "/mnt/s"}}}, "overlaps autobox management storage")
	s.wantJSError(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": filepath.Dir(storage), "sandboxPath": "/mnt/s", "mode": "rw"}}}, "overlaps autobox management storage")
	s.mustJS(map[string]any{"code": "1", "mounts": []map[string]any{{"hostPath": filepath.Dir(storage), "sandboxPath": "/mnt/s", "mode": "ro"}}})

	d, isErr := s.ws(map[string]any{"action": "discard", "workspaceId": c.WorkspaceID})
	if isErr || !d.OK {
		t.Fatalf("discard: %+v", d)
	}
	if readFile(t, filepath.Join(src, "hello.txt")) != "host edit" {
		t.Errorf("discard touched the source")
	}
	if res := s.callRaw("copy_then_sync", map[string]any{"action": "status", "workspaceId": c.WorkspaceID}); !res.IsError || !strings.Contains(errorOf(res), "not found") {
		t.Errorf("status after discard: %s", textOf(res))
	}
	s.wantJSError(map[string]any{"code": "1", "mounts": mount}, "not found")
}

func TestWorkspaceArguments(t *testing.T) {
	s := start(t)
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "action"},
		{map[string]any{"action": "explode"}, `action "explode"`},
		{map[string]any{"action": "create", "sandboxPath": "/mnt/p"}, "hostPath"},
		{map[string]any{"action": "status"}, "needs workspaceId"},
		{map[string]any{"action": "status", "workspaceId": "../../etc"}, "workspace"},
		{map[string]any{"action": "create", "hostPath": "/nonexistent-dir", "sandboxPath": "/mnt/p"}, "nonexistent-dir"},
		{map[string]any{"action": "create", "hostPath": t.TempDir(), "sandboxPath": "/", "copyMode": "auto"}, "/"},
		{map[string]any{"action": "create", "hostPath": t.TempDir(), "sandboxPath": "/mnt/p", "copyMode": "yolo"}, "copyMode"},
		{map[string]any{"action": "create", "hostPath": t.TempDir(), "sandboxPath": "/mnt/p", "copyMode": "auto", "excludes": []string{"../x"}}, ".."},
	} {
		res := s.callRaw("copy_then_sync", c.args)
		if !res.IsError || !strings.Contains(errorOf(res), c.want) {
			t.Errorf("%v: want error mentioning %q, got isError=%v %s", c.args, c.want, res.IsError, textOf(res))
		}
	}
}

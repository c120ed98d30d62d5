//go:build linux

package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceReview (issue 22, items 3 and 4) over MCP: status with a diff, sync
// of some paths, a host conflict merged, another resolved by hand, and hostile
// entries (a link out, a control character in a name, a file made a directory) in
// the diff and in a partial sync; every refusal has its control.
func TestWorkspaceReview(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.txt"), "a\n")
	writeFile(t, filepath.Join(src, "b.txt"), "one\ntwo\nthree\n")
	writeFile(t, filepath.Join(src, "README"), "title\n\nbody\nmore\nend\n")
	writeFile(t, filepath.Join(src, "was-file"), "f\n")
	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/p", "storagePath": t.TempDir(), "copyMode": "auto"})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	id := c.WorkspaceID
	run := func(script string) {
		t.Helper()
		if e, _ := s.exec(map[string]any{"command": bash(script), "cwd": "/mnt/p", "mounts": []map[string]any{{"workspaceId": id}}}); e.code() != 0 {
			t.Fatalf("%s: %+v", script, e)
		}
	}
	run(`echo A > a.txt; printf 'one\nTWO\nthree\n' > b.txt; printf 'Title\n\nbody\nmore\nend\n' > README; ln -s /etc/passwd link; ` +
		`printf 'x\n' > "$(printf 'evil\033[2Kname')"; rm was-file; mkdir was-file; echo inside > was-file/in`)

	// status with a diff; paths are validated, naming the parameter.
	st, isErr := s.ws(map[string]any{"action": "status", "workspaceId": id, "diff": true})
	for _, want := range []string{"--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n", "-two\n+TWO\n", "+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n", `diff --git "a/evil\x1b[2Kname"`} {
		if isErr || !strings.Contains(st.Diff, want) {
			t.Errorf("status diff lacks %q: %v\n%s", want, isErr, st.Diff)
		}
	}
	if strings.Contains(st.Diff, "root:") {
		t.Error("the diff followed a link out of the workspace")
	}
	if plain, _ := s.ws(map[string]any{"action": "status", "workspaceId": id}); plain.Diff != "" {
		t.Error("status without diff: true has a diff")
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "status", "workspaceId": id, "paths": []string{"../etc"}}, `paths[0] "../etc" contains ".."`},
		{map[string]any{"action": "sync", "workspaceId": id, "paths": []string{"a.txt", "/etc/passwd"}}, `paths[1] "/etc/passwd" is absolute`},
		{map[string]any{"action": "sync", "workspaceId": id, "paths": []string{"nope"}}, `paths[0] "nope": the workspace has no change at or beneath it`},
		{map[string]any{"action": "sync", "workspaceId": id, "diff": true}, "sync takes workspaceId, paths, includeIgnored, not diff"},
		{map[string]any{"action": "merge", "workspaceId": id}, "merge needs paths"},
		{map[string]any{"action": "resolve", "workspaceId": id, "paths": []string{"a.txt"}}, `paths[0] "a.txt": it is not in conflict`},
	} {
		if res := s.callRaw("copy_then_sync", bad.args); !res.IsError || !strings.Contains(errorOf(res), bad.want) {
			t.Errorf("%v: want a tool error with %q, got %s", bad.args, bad.want, textOf(res))
		}
	}
	if got := readFile(t, filepath.Join(src, "a.txt")); got != "a\n" {
		t.Fatalf("a refused call changed the host: %q", got)
	}

	// Sync of some paths: a.txt, the hostile name, the file made a directory; the
	// link out is a conflict of its own but not named, so it does not stop them.
	sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": id, "paths": []string{"a.txt", "evil\x1b[2Kname", "/mnt/p/was-file"}})
	if isErr || !sy.OK || len(sy.Applied) != 4 || len(sy.Pending) != 3 {
		t.Fatalf("sync with paths: %v %+v", isErr, sy)
	}
	if readFile(t, filepath.Join(src, "a.txt")) != "A\n" || readFile(t, filepath.Join(src, "evil\x1b[2Kname")) != "x\n" || readFile(t, filepath.Join(src, "was-file", "in")) != "inside\n" {
		t.Error("the named paths are not on the host")
	}
	if readFile(t, filepath.Join(src, "b.txt")) != "one\ntwo\nthree\n" || fileExists(filepath.Join(src, "link")) {
		t.Error("a path not named reached the host")
	}
	if res := s.callRaw("copy_then_sync", map[string]any{"action": "sync", "workspaceId": id, "paths": []string{"link"}}); !res.IsError || !strings.Contains(textOf(res), "link") {
		t.Errorf("sync of a link out of the source: want a conflict, got %s", textOf(res))
	}
	run("rm link")

	// The host changes README (another line) and b.txt (the same line).
	writeFile(t, filepath.Join(src, "README"), "title\n\nbody\nmore\nthe end\n")
	writeFile(t, filepath.Join(src, "b.txt"), "one\n2\nthree\n")
	sy, isErr = s.ws(map[string]any{"action": "sync", "workspaceId": id})
	if !isErr || sy.OK || len(sy.Conflicts) != 2 || !strings.Contains(string(sy.Conflicts[0]), `action \"merge\" with paths [\"README\"]`) {
		t.Fatalf("sync with host conflicts: %v %+v", isErr, sy)
	}
	m, isErr := s.ws(map[string]any{"action": "merge", "workspaceId": id, "paths": []string{"README", "b.txt"}})
	if !isErr || m.OK || strings.Join(m.Merged, ",") != "README" || len(m.Conflicted) != 1 || m.Conflicted[0].Path != "b.txt" || !strings.Contains(m.Next, `action "resolve" with paths ["b.txt"]`) {
		t.Fatalf("merge: %v %+v", isErr, m)
	}
	if res := s.callRaw("copy_then_sync", map[string]any{"action": "resolve", "workspaceId": id, "paths": []string{"b.txt"}}); !res.IsError || !strings.Contains(errorOf(res), "conflict marker at line 2") {
		t.Errorf("resolve with markers left: %s", textOf(res))
	}
	run(`printf 'one\nTWO and 2\nthree\n' > b.txt`)
	if r, isErr := s.ws(map[string]any{"action": "resolve", "workspaceId": id, "paths": []string{"b.txt"}}); isErr || !r.OK || len(r.Resolved) != 1 {
		t.Fatalf("resolve: %v %+v", isErr, r)
	}
	sy, isErr = s.ws(map[string]any{"action": "sync", "workspaceId": id})
	if isErr || !sy.OK {
		t.Fatalf("sync after merge and resolve: %v %+v", isErr, sy)
	}
	if got := readFile(t, filepath.Join(src, "README")); got != "Title\n\nbody\nmore\nthe end\n" {
		t.Errorf("README on the host: %q", got)
	}
	if got := readFile(t, filepath.Join(src, "b.txt")); got != "one\nTWO and 2\nthree\n" {
		t.Errorf("b.txt on the host: %q", got)
	}
}

// TestCLIWorkspaceReview: the same steps on the command line.
func TestCLIWorkspaceReview(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "a.txt"), "a\n")
	writeFile(t, filepath.Join(src, "b.txt"), "one\ntwo\nthree\nfour\n")
	r := h.run("", "ws", "create", "--copy-mode", "auto", "src", "/mnt/p")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 {
		t.Fatalf("create: %s", r)
	}
	h.want(h.run("", "exec", "--workspace", id, "--cwd", "/mnt/p", "--", "sh", "-c", `echo A > a.txt; printf 'ONE\ntwo\nthree\nfour\n' > b.txt; printf 'x\033[2K\n' > esc.txt`), 0, "", "")
	h.want(h.run("", "ws", "status", "--diff", id), 0, "-a\n+A\n", "")
	if r := h.run("", "ws", "status", "--diff", id); strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, `+x\x1b[2K`) {
		t.Errorf("the diff printed a control sequence, or not escaped: %s", r)
	}
	h.want(h.run("", "ws", "status", id, "../x"), 125, "", `PATH #1 "../x" contains ".."`)
	h.want(h.run("", "ws", "sync", "--diff", id), 2, "", "--diff is for status only")
	h.want(h.run("", "ws", "sync", id, "a.txt"), 0, "synced 1 of 1 changes", "")
	if readFile(t, filepath.Join(src, "a.txt")) != "A\n" || readFile(t, filepath.Join(src, "b.txt")) != "one\ntwo\nthree\nfour\n" {
		t.Error("sync of a.txt alone")
	}
	writeFile(t, filepath.Join(src, "b.txt"), "one\ntwo\nthree\nfour!\n")
	h.want(h.run("", "ws", "sync", id), 1, "autobox ws merge "+id+" b.txt", "")
	h.want(h.run("", "ws", "merge", id, "b.txt"), 0, "merged    b.txt", "")
	h.want(h.run("", "ws", "resolve", id, "a.txt"), 125, "", `PATH #1 "a.txt": it is not in conflict`)
	h.want(h.run("", "ws", "sync", id), 0, "synced 2 of 2 changes", "")
	if got := readFile(t, filepath.Join(src, "b.txt")); got != "ONE\ntwo\nthree\nfour!\n" {
		t.Errorf("b.txt on the host: %q", got)
	}
	r = h.run("", "ws", "status", "--json", "--diff", id)
	var st struct {
		Changes []json.RawMessage `json:"changes"`
		Diff    string            `json:"diff"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Changes) != 0 || st.Diff != "" {
		t.Errorf("status --json after sync: %v %s", err, r)
	}
	os.RemoveAll(src)
}

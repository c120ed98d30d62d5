package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The review of a workspace through a real MCP client: a command installs 1,000
// files in node_modules and leaves a .pyc and a .pytest_cache behind; status lists
// only the change a reviewer must read, says what it left out and how to see it, and
// sync brings none of the generated files to the host. The command's own .gitignore
// (of "*") hides nothing, and removing a directory keeps the ignored host files in
// it. includeIgnored lists the ignored paths, node_modules as one line.
func TestWorkspaceIgnoreRules(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the source's git rules cannot be tested here")
	}
	s := start(t)
	src := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	writeFile(t, filepath.Join(src, ".gitignore"), "node_modules/\n__pycache__/\n*.pyc\n.pytest_cache/\n")
	writeFile(t, filepath.Join(src, "main.py"), "print(1)\n")
	writeFile(t, filepath.Join(src, "pkg", "m.py"), "x = 1\n")
	writeFile(t, filepath.Join(src, "pkg", "__pycache__", "m.pyc"), "host cache")
	git("add", ".")
	git("commit", "-qm", "init")

	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/project", "storagePath": t.TempDir()})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	id := c.WorkspaceID
	o, _ := s.exec(map[string]any{"command": bash(`set -e
for p in $(seq 1 100); do mkdir -p node_modules/pkg$p/lib; for f in $(seq 1 10); do echo "module.exports = $p$f" > node_modules/pkg$p/lib/f$f.js; done; done
mkdir -p .pytest_cache/v && echo '{}' > .pytest_cache/v/last
echo cache > main.pyc
echo 'print(2)' > main.py
rm -rf pkg
echo '*' > .gitignore`), "cwd": "/mnt/project", "mounts": []map[string]any{{"workspaceId": id}}, "timeoutMs": 120000})
	if o.code() != 0 {
		t.Fatalf("the command: %+v", o)
	}

	res := s.callRaw("copy_then_sync", map[string]any{"action": "status", "workspaceId": id})
	var st struct {
		wsOut
		Ignored struct {
			Count int      `json:"count"`
			Paths []string `json:"paths"`
			Rules string   `json:"rules"`
			Note  string   `json:"note"`
		} `json:"ignored"`
		Summarized string `json:"summarized"`
	}
	text := textOf(res)
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		t.Fatalf("status text is not the result object: %v\n%s", err, text)
	}
	var got []string
	for _, ch := range st.Changes {
		got = append(got, ch.Action+" "+ch.Path)
	}
	if want := []string{"modify .gitignore", "modify main.py", "delete pkg/m.py"}; res.IsError || !slices.Equal(got, want) {
		t.Errorf("status lists %q, want %q", got, want)
	}
	if st.Ignored.Count < 1000 || !slices.Equal(st.Ignored.Paths, []string{".pytest_cache", "main.pyc", "node_modules", "pkg/__pycache__"}) || !strings.HasPrefix(st.Ignored.Rules, "git") || !strings.Contains(st.Ignored.Note, "includeIgnored: true") {
		t.Errorf("status does not say what it left out: %+v", st.Ignored)
	}
	all := s.callRaw("copy_then_sync", map[string]any{"action": "status", "workspaceId": id, "includeIgnored": true})
	withDiff := s.callRaw("copy_then_sync", map[string]any{"action": "status", "workspaceId": id, "includeIgnored": true, "diff": true})
	listed := s.callRaw("copy_then_sync", map[string]any{"action": "status", "workspaceId": id, "includeIgnored": true, "paths": []string{"node_modules"}})
	t.Logf("status answer with 1,000 files in node_modules: %d bytes; includeIgnored %d (diff: %d); every entry listed (paths: [node_modules]) %d",
		len(text), len(textOf(all)), len(textOf(withDiff)), len(textOf(listed)))
	if len(text) > 4096 || len(textOf(all)) > 4096 || !strings.Contains(textOf(all), `"path":"node_modules","action":"add","files":1000`) || !strings.Contains(textOf(all), `name one in paths (e.g. paths: [\"node_modules\"])`) {
		t.Errorf("includeIgnored: not one bounded line for node_modules:\n%s", textOf(all))
	}
	if n := strings.Count(textOf(listed), `"action":"add"`); n < 1000 {
		t.Errorf("paths naming node_modules lists %d entries", n)
	}
	// includeIgnored is for status and sync; a wrong action names the parameters.
	if r := s.callRaw("copy_then_sync", map[string]any{"action": "discard", "workspaceId": id, "includeIgnored": true}); !r.IsError || !strings.Contains(errorOf(r), "discard takes workspaceId, not includeIgnored") {
		t.Errorf("discard with includeIgnored: %s", textOf(r))
	}

	sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": id})
	if isErr || !sy.OK || len(sy.Applied) != 3 {
		t.Fatalf("sync: %+v", sy)
	}
	for _, p := range []string{"node_modules", ".pytest_cache", "main.pyc", "pkg/m.py"} {
		if _, err := os.Lstat(filepath.Join(src, p)); err == nil {
			t.Errorf("%s is on the host after sync", p)
		}
	}
	if readFile(t, filepath.Join(src, "pkg", "__pycache__", "m.pyc")) != "host cache" || readFile(t, filepath.Join(src, "main.py")) != "print(2)\n" {
		t.Error("sync deleted an ignored host file, or did not apply the edit")
	}
}

package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Attacks on the ignore rules of copy_then_sync status and sync: a workspace
// command that writes files to hide its changes from review, and a command that
// writes where the host's git reads its rules. The promise under attack: ignoring
// only leaves a change out of the listing and the sync; an ignored host path is
// never deleted or overwritten; the workspace's own rules are never read.

// wsChanges is the "action path" list of a status or sync answer.
func wsChanges(o wsOut) []string {
	var got []string
	for _, ch := range o.Changes {
		got = append(got, ch.Action+" "+ch.Path)
	}
	return got
}

// hostGit runs git in dir with a fixed identity and no system config.
func hostGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestIgnoreMarkersWrittenInSourceDirs: without git, a command writes
// CACHEDIR.TAG and pyvenv.cfg into directories of real code, a regular file
// named node_modules, and a symlink named node_modules that leads out, to take
// its edits and deletions out of the review. They are left out of the sync as
// well: the host's code is neither changed nor deleted, and the change the
// command made elsewhere (positive control) is listed and synced.
func TestIgnoreMarkersWrittenInSourceDirs(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "src", "main.py"), "print('host')\n")
	writeFile(t, filepath.Join(src, "lib", "a.py"), "a = 1\n")
	writeFile(t, filepath.Join(src, "keep.py"), "k = 1\n")
	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/project", "storagePath": t.TempDir()})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	id := c.WorkspaceID
	o, _ := s.exec(map[string]any{"command": bash(`set -e
echo "Signature: 8a477f597d28d172789f06886806bc55" > src/CACHEDIR.TAG
echo "print('evil')" > src/main.py
echo "home = /usr" > lib/pyvenv.cfg
rm lib/a.py
echo smuggled > node_modules
mkdir x && ln -s /etc x/node_modules
echo 'k = 2' > keep.py`), "cwd": "/mnt/project", "mounts": []map[string]any{{"workspaceId": id}}})
	if o.code() != 0 {
		t.Fatalf("the command: %+v", o)
	}
	st, _ := s.ws(map[string]any{"action": "status", "workspaceId": id})
	got := wsChanges(st)
	if !slices.Contains(got, "modify keep.py") {
		t.Errorf("status does not list the plain edit (positive control): %q", got)
	}
	all, _ := s.ws(map[string]any{"action": "status", "workspaceId": id, "includeIgnored": true})
	if got := wsChanges(all); !slices.Contains(got, "modify src/main.py") || !slices.Contains(got, "delete lib/a.py") {
		t.Errorf("includeIgnored does not list the hidden edit and deletion one by one: %q", got)
	}
	sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": id})
	if isErr || !sy.OK {
		t.Fatalf("sync: %+v", sy)
	}
	if readFile(t, filepath.Join(src, "keep.py")) != "k = 2\n" {
		t.Error("the plain edit was not synced")
	}
	if readFile(t, filepath.Join(src, "src", "main.py")) != "print('host')\n" {
		t.Error("sync applied an edit that status did not list")
	}
	if readFile(t, filepath.Join(src, "lib", "a.py")) != "a = 1\n" {
		t.Error("sync deleted a host file that status did not list")
	}
	for _, p := range []string{"node_modules", "x/node_modules", "src/CACHEDIR.TAG", "lib/pyvenv.cfg"} {
		if _, err := os.Lstat(filepath.Join(src, p)); err == nil {
			t.Errorf("%s is on the host after a sync that did not list it", p)
		}
	}
}

// TestIgnoreHostRulesAttacked: in a git source whose .gitignore ignores
// everything (`*`), a workspace's deletion and edit of tracked files are still
// listed and synced, its new file is left out; the workspace's own
// .git/info/exclude and .gitignore hide nothing. A command with a read-write
// mount of the directory that holds the repository's core.excludesFile can
// write `*` there: a later review then leaves out new files, never tracked
// edits or deletions, and what it leaves out is not synced. A directory the
// workspace removes keeps the ignored files the host added to it since.
func TestIgnoreHostRulesAttacked(t *testing.T) {
	requireSandbox(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the source's git rules cannot be tested here")
	}
	s := start(t)
	src, rules := t.TempDir(), compatDir(t)
	hostGit(t, src, "init", "-q")
	hostGit(t, src, "config", "core.excludesFile", filepath.Join(rules, "ignore"))
	writeFile(t, filepath.Join(src, ".gitignore"), "build/\n")
	writeFile(t, filepath.Join(src, "a.txt"), "a\n")
	writeFile(t, filepath.Join(src, "d", "b.txt"), "b\n")
	writeFile(t, filepath.Join(src, "web", "app.js"), "app\n")
	writeFile(t, filepath.Join(src, "web", "build", "old.js"), "old build\n")
	hostGit(t, src, "add", ".gitignore", "a.txt", "d/b.txt", "web/app.js")
	hostGit(t, src, "commit", "-qm", "init")

	// A command of another call writes the repository's excludesFile through a mount.
	o, _ := s.exec(map[string]any{"command": bash("echo '*' > /mnt/rules/ignore"), "mounts": []map[string]any{{"hostPath": rules, "sandboxPath": "/mnt/rules", "mode": "rw"}}})
	if o.code() != 0 {
		t.Fatalf("writing the excludesFile: %+v", o)
	}

	c, isErr := s.ws(map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/project", "storagePath": t.TempDir()})
	if isErr || !c.OK {
		t.Fatalf("create: %+v", c)
	}
	id := c.WorkspaceID
	// The host builds after the workspace was made.
	writeFile(t, filepath.Join(src, "web", "build", "new.js"), "new build\n")
	o, _ = s.exec(map[string]any{"command": bash(`set -e
rm a.txt
echo b2 > d/b.txt
echo new > new.txt
mkdir -p .git/info && printf '*\n' > .git/info/exclude
printf '*\n' > .gitignore
rm -rf web`), "cwd": "/mnt/project", "mounts": []map[string]any{{"workspaceId": id}}})
	if o.code() != 0 {
		t.Fatalf("the command: %+v", o)
	}
	st, _ := s.ws(map[string]any{"action": "status", "workspaceId": id})
	got := wsChanges(st)
	for _, want := range []string{"delete a.txt", "modify d/b.txt", "modify .gitignore", "delete web/app.js"} {
		if !slices.Contains(got, want) {
			t.Errorf("status does not list %q: %q", want, got)
		}
	}
	if slices.Contains(got, "add new.txt") {
		t.Errorf("the excludesFile's `*` did not apply to the new file: %q", got)
	}
	sy, isErr := s.ws(map[string]any{"action": "sync", "workspaceId": id})
	t.Logf("sync: isErr %v %+v", isErr, sy)
	if _, err := os.Stat(filepath.Join(src, "a.txt")); err == nil {
		t.Error("the listed deletion of a.txt was not synced")
	}
	if readFile(t, filepath.Join(src, "d", "b.txt")) != "b2\n" {
		t.Error("the listed edit of d/b.txt was not synced")
	}
	if _, err := os.Stat(filepath.Join(src, "new.txt")); err == nil {
		t.Error("new.txt, left out of the review, was synced")
	}
	for p, want := range map[string]string{"web/build/old.js": "old build\n", "web/build/new.js": "new build\n"} {
		if got, err := os.ReadFile(filepath.Join(src, p)); err != nil || string(got) != want {
			t.Errorf("the ignored host file %s: %q, %v (want it kept)", p, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "web", "app.js")); err == nil && !strings.Contains(strings.Join(got, " "), "conflict") {
		t.Logf("web/app.js kept on the host (sync: %+v)", sy)
	}
}

package store

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitIn runs git in dir with a fixed identity and no user or system configuration
// but what the test sets.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// needGit skips without git, and gives git a home of the test's own (global
// excludes in it) so the machine's configuration cannot change the answer.
func needGit(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the git rules cannot be tested here")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	return home
}

func changePaths(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, string(c.Action)+" "+c.Path)
	}
	return out
}

func statusWith(t *testing.T, e *env, id string, opts *StatusOptions) *StatusResult {
	t.Helper()
	st, err := e.s.StatusWith(context.Background(), id, opts)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	return st
}

// The source's git rules, exactly: .gitignore at two levels, .git/info/exclude,
// the user's core.excludesFile, a tracked file under an ignored directory (listed,
// as git lists it), and names git could misread (a leading dash, pathspec magic, a
// newline). Ignored paths are neither listed nor synced; includeIgnored lists them.
func TestIgnoreGitRules(t *testing.T) {
	home := needGit(t)
	e := newEnv(t)
	writeFile(t, home, ".gitconfig", "[core]\n\texcludesFile = "+filepath.Join(home, "global-ignore")+"\n")
	writeFile(t, home, "global-ignore", "*.swp\n")
	gitIn(t, e.src, "init", "-q")
	writeFile(t, e.src, ".gitignore", "node_modules/\n*.pyc\nbuild/\n")
	writeFile(t, e.src, "sub/.gitignore", "*.log\n")
	writeFile(t, e.src, ".git/info/exclude", "secret.local\n")
	writeFile(t, e.src, "main.py", "print(1)\n")
	writeFile(t, e.src, "build/keep.txt", "tracked\n")
	gitIn(t, e.src, "add", "-f", ".")
	gitIn(t, e.src, "commit", "-qm", "init")
	id := e.create().WorkspaceID
	w := e.work(id)
	for i := range 1000 {
		writeFile(t, w, filepath.Join("node_modules", "pkg"+string(rune('a'+i%26)), "f"+strings.Repeat("x", i/26)+".js"), "module.exports = 1\n")
	}
	for _, f := range []string{"a.pyc", "sub/x.log", "secret.local", "main.py.swp", "build/out.o", "a\nb.pyc", "-n.pyc"} {
		writeFile(t, w, f, "generated\n")
	}
	for _, f := range []string{"x.log", "-n", ":(top)node_modules", "--stdin"} {
		writeFile(t, w, f, "kept\n") // not ignored: *.log is sub's rule; the others are names
	}
	writeFile(t, w, "main.py", "print(2)\n")
	writeFile(t, w, "build/keep.txt", "changed\n") // tracked: git lists it
	st := statusWith(t, e, id, nil)
	got := changePaths(st.Changes)
	want := []string{"add --stdin", "add -n", "add :(top)node_modules", "modify build/keep.txt", "modify main.py", "add x.log"}
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if st.Ignored == nil || st.Ignored.Count < 1007 || !slices.Contains(st.Ignored.Paths, "node_modules") || !strings.HasPrefix(st.Ignored.Rules, "git") || !strings.Contains(st.Ignored.Note, "includeIgnored") {
		t.Errorf("ignored summary: %+v", st.Ignored)
	}
	small, _ := json.Marshal(st)
	all := statusWith(t, e, id, &StatusOptions{IncludeIgnored: true})
	big, _ := json.Marshal(all)
	t.Logf("status of 1,000 new files in node_modules: %d bytes by default, %d with includeIgnored (one line for node_modules: %v)", len(small), len(big), all.Summarized != "")
	if len(small) > 4096 || len(big) > 8192 {
		t.Errorf("status is not bounded: %d and %d bytes", len(small), len(big))
	}
	var nm *Change
	for i := range all.Changes {
		if all.Changes[i].Path == "node_modules" {
			nm = &all.Changes[i]
		}
	}
	if nm == nil || nm.Files != 1000 || nm.Bytes != 1000*int64(len("module.exports = 1\n")) || len(nm.First) != firstShown || nm.First[0] != "pkga/" || !strings.Contains(all.Summarized, `paths: ["node_modules"]`) {
		t.Errorf("includeIgnored: node_modules listed as %+v; summarized %q", nm, all.Summarized)
	}
	// Naming it in paths lists it entry by entry.
	one := statusWith(t, e, id, &StatusOptions{IncludeIgnored: true, Paths: []string{"node_modules/pkga"}})
	if len(one.Changes) < 39 || one.Summarized != "" {
		t.Errorf("paths naming a summarized directory: %d changes, summarized %q", len(one.Changes), one.Summarized)
	}
	res := e.mustSync(id)
	if res.Ignored == nil || len(res.Applied) != len(want) {
		t.Errorf("sync applied %q, ignored %+v", res.Applied, res.Ignored)
	}
	for _, f := range []string{"node_modules", "a.pyc", "sub/x.log", "secret.local", "main.py.swp", "build/out.o", "a\nb.pyc"} {
		if exists(filepath.Join(e.src, f)) {
			t.Errorf("ignored %q was synced to the host", f)
		}
	}
	if readFile(t, e.src, "main.py") != "print(2)\n" || readFile(t, e.src, "build/keep.txt") != "changed\n" || !exists(filepath.Join(e.src, "--stdin")) {
		t.Error("the listed changes were not synced")
	}
	// includeIgnored syncs them, node_modules as one applied change.
	r, err := e.s.SyncWith(context.Background(), id, &SyncOptions{IncludeIgnored: true})
	if err != nil || !r.OK || !slices.Contains(r.Applied, "node_modules") || !exists(filepath.Join(e.src, "node_modules/pkgz/f"+strings.Repeat("x", 25)+".js")) {
		t.Errorf("sync with includeIgnored: %v %+v", err, r)
	}
}

// Ignoring never deletes or overwrites a host path: a directory the workspace
// removes keeps its ignored entries (its others are removed), an ignored file the
// workspace deletes or edits stays as it is, and a directory holding ignored entries
// replaced by a file is a conflict. A .gitignore the workspace writes is a listed
// change and hides nothing until it is synced.
func TestIgnoreNeverDeletes(t *testing.T) {
	needGit(t)
	e := newEnv(t)
	gitIn(t, e.src, "init", "-q")
	writeFile(t, e.src, ".gitignore", "__pycache__/\n*.pyc\n")
	writeFile(t, e.src, "pkg/m.py", "x = 1\n")
	writeFile(t, e.src, "pkg/sub/n.py", "y = 1\n")
	writeFile(t, e.src, "pkg/__pycache__/m.cpython-312.pyc", "host cache\n")
	writeFile(t, e.src, "keep.pyc", "host\n")
	writeFile(t, e.src, "edit.pyc", "host\n")
	writeFile(t, e.src, "lib/c.pyc", "host\n")
	writeFile(t, e.src, "lib/c.py", "c\n")
	id := e.create().WorkspaceID
	w := e.work(id)
	must(t, os.RemoveAll(filepath.Join(w, "pkg")))
	must(t, os.Remove(filepath.Join(w, "keep.pyc")))
	writeFile(t, w, "edit.pyc", "workspace\n")
	// The command's own rules hide nothing: "*" in a .gitignore it writes.
	writeFile(t, w, ".gitignore", "*\n")
	writeFile(t, w, "new.txt", "new\n")
	st := statusWith(t, e, id, nil)
	if got, want := changePaths(st.Changes), []string{"modify .gitignore", "add new.txt", "delete pkg/m.py", "delete pkg/sub"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	// Replacing lib (which holds an ignored file) with a file is refused.
	must(t, os.RemoveAll(filepath.Join(w, "lib")))
	writeFile(t, w, "lib", "now a file\n")
	res := e.sync(id)
	if res.OK || len(res.Conflicts) != 1 || res.Conflicts[0].Path != "lib" || !strings.Contains(res.Conflicts[0].Reason, "lib/c.pyc") || len(res.Applied) != 0 {
		t.Fatalf("replacing a directory with ignored entries: %+v", res)
	}
	must(t, os.Remove(filepath.Join(w, "lib")))
	writeFile(t, w, "lib/c.py", "c\n")
	writeFile(t, w, "lib/c.pyc", "host\n")
	r, err := e.s.SyncWith(context.Background(), id, &SyncOptions{Paths: []string{"pkg", "new.txt"}})
	if err != nil || !r.OK {
		t.Fatalf("sync: %v %+v", err, r)
	}
	if exists(filepath.Join(e.src, "pkg/m.py")) || exists(filepath.Join(e.src, "pkg/sub")) {
		t.Error("the removed directory's other entries are still on the host")
	}
	if readFile(t, e.src, "pkg/__pycache__/m.cpython-312.pyc") != "host cache\n" || readFile(t, e.src, "keep.pyc") != "host\n" || readFile(t, e.src, "edit.pyc") != "host\n" {
		t.Error("sync deleted or overwrote an ignored host path")
	}
	// Synced, the workspace's .gitignore applies: new.txt is synced, other.txt now ignored.
	writeFile(t, w, "other.txt", "o\n")
	r, err = e.s.SyncWith(context.Background(), id, &SyncOptions{Paths: []string{".gitignore"}})
	if err != nil || !r.OK {
		t.Fatalf("sync .gitignore: %v %+v", err, r)
	}
	if st := statusWith(t, e, id, nil); len(st.Changes) != 0 || st.Ignored == nil {
		t.Errorf("after syncing a .gitignore of *: %q, ignored %+v", changePaths(st.Changes), st.Ignored)
	}
}

// Without git (PATH without it) or outside a work tree, the default list applies:
// dependency and cache trees, tagged cache directories and virtual environments are
// left out; build outputs users keep (dist, build, target without a tag) are not.
func TestIgnoreDefaultList(t *testing.T) {
	for _, noGit := range []bool{false, true} {
		t.Run(map[bool]string{false: "not a repository", true: "git not installed"}[noGit], func(t *testing.T) {
			e := newEnv(t)
			if noGit {
				t.Setenv("PATH", t.TempDir())
			} else if _, err := exec.LookPath("git"); err != nil {
				t.Skip("git is not installed")
			}
			writeFile(t, e.src, "app.py", "a\n")
			id := e.create().WorkspaceID
			w := e.work(id)
			for _, f := range []string{"node_modules/x/i.js", "__pycache__/a.pyc", "m.pyc", ".pytest_cache/v/x", "target/CACHEDIR.TAG", "target/debug/app", "venv/pyvenv.cfg", "venv/lib/x.py", ".venv/bin/python"} {
				writeFile(t, w, f, "generated\n")
			}
			for _, f := range []string{"dist/app.js", "build/out.txt", "vendor/lib.go", ".env", "app.py"} {
				writeFile(t, w, f, "kept\n")
			}
			st := statusWith(t, e, id, nil)
			if got, want := changePaths(st.Changes), []string{"add .env", "modify app.py", "add build", "add build/out.txt", "add dist", "add dist/app.js", "add vendor", "add vendor/lib.go"}; !slices.Equal(got, want) {
				t.Errorf("changes %q, want %q", got, want)
			}
			if st.Ignored == nil || !strings.Contains(st.Ignored.Rules, "default list") || !slices.Equal(st.Ignored.Paths, []string{".pytest_cache", ".venv", "__pycache__", "m.pyc", "node_modules", "target", "venv"}) {
				t.Errorf("ignored: %+v", st.Ignored)
			}
		})
	}
}

// A repository nested in the source is judged by its own rules; a path beneath a
// host symbolic link (which git refuses to look through) is listed, not an error.
func TestIgnoreNestedRepoAndLinks(t *testing.T) {
	needGit(t)
	e := newEnv(t)
	gitIn(t, e.src, "init", "-q")
	writeFile(t, e.src, "inner/.gitignore", "*.log\n")
	gitIn(t, filepath.Join(e.src, "inner"), "init", "-q")
	must(t, os.Mkdir(filepath.Join(e.src, "real"), 0o755))
	must(t, os.Symlink("real", filepath.Join(e.src, "lnk")))
	writeFile(t, e.src, ".gitignore", "*.tmp\n")
	id := e.create().WorkspaceID
	w := e.work(id)
	writeFile(t, w, "inner/x.log", "l\n")
	writeFile(t, w, "inner/x.tmp", "t\n") // the outer rule does not reach into inner
	writeFile(t, w, "y.log", "l\n")
	writeFile(t, w, "y.tmp", "t\n")
	must(t, os.Remove(filepath.Join(w, "lnk")))
	writeFile(t, w, "lnk/z.txt", "z\n")
	st := statusWith(t, e, id, nil)
	if got, want := changePaths(st.Changes), []string{"add inner/x.tmp", "replace lnk", "add lnk/z.txt", "add y.log"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
	if st.Ignored == nil || !slices.Equal(st.Ignored.Paths, []string{"inner/x.log", "y.tmp"}) {
		t.Errorf("ignored %+v", st.Ignored)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A new directory the rules ignore is one question to git, whatever it holds; the
// entries of a new directory they do not ignore are asked about, level by level.
func TestIgnoreAsksOncePerIgnoredDir(t *testing.T) {
	needGit(t)
	e := newEnv(t)
	gitIn(t, e.src, "init", "-q")
	writeFile(t, e.src, ".gitignore", "node_modules/\n*.o\n")
	id := e.create().WorkspaceID
	w := e.work(id)
	for i := range 3000 {
		writeFile(t, w, filepath.Join("node_modules", "p"+strings.Repeat("q", i%30), "lib", "deep", "f"+strings.Repeat("x", i/30)+".js"), "x\n")
	}
	for i := range 12 {
		writeFile(t, w, filepath.Join("proj", strings.Repeat("d/", i), "a.o"), "o\n")
	}
	o, err := e.s.open(id)
	must(t, err)
	defer o.Close()
	pl, err := makePlan(context.Background(), o, true)
	must(t, err)
	asked, rounds := 0, 0
	ign, rules := pl.judgeInRounds(func(qs []ignoreQuery) (map[string]bool, string) {
		asked += len(qs)
		rounds++
		return judgeIgnored(context.Background(), e.src, qs, func(string) bool { return false }, func(string, string) bool { return false }, func(string) bool { return false })
	})
	if !ign["node_modules/p/lib/deep/f.js"] || !ign["proj/d/d/d/d/d/d/d/d/d/d/d/a.o"] || ign["proj/d"] || !strings.HasPrefix(rules, "git") {
		t.Errorf("ignored %d paths, rules %q", len(ign), rules)
	}
	if asked > 40 || rounds != pruneRounds {
		t.Errorf("asked git about %d paths in %d rounds; want node_modules once and proj level by level, then the rest at once", asked, rounds)
	}
}

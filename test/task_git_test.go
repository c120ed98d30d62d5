//go:build linux

package test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Escape D of issue 16: the harness of a native task writes its worktree and the parts of
// the repository a commit needs; host git run in that worktree afterwards (by a person, or
// by autobox) must run nothing the harness wrote. Each route plants the same configuration,
// one key a marker: core.fsmonitor, core.hooksPath, core.pager, an alias, include.path and
// core.sshCommand. The probes then run plain git on the host; a marker that exists means
// host git ran a command the harness chose. The control shows that the probes do create
// every marker when the configuration is the repository's own.

// harnessPrelude starts every route's harness: it commits legitimate work (which must be on
// the task branch afterwards), and lays out what the planted configuration names. evil
// prints that configuration; evilrepo makes a copy of the repository that carries it.
const harnessPrelude = `set -u
M='@MARKERS@'
WT=$PWD
AD=$(sed -n 's/^gitdir: //p' .git)
CD=$(cd "$AD" && cd "$(cat commondir)" && pwd -P)
echo work > work.txt && git add work.txt && git commit -qm "harness work" || exit 90
mkdir -p .evil-hooks
for h in pre-commit post-commit post-checkout pre-push pre-rebase; do
	printf '#!/bin/sh\ntouch %s/hooks\n' "$M" > .evil-hooks/$h && chmod +x .evil-hooks/$h
done
printf '[alias]\n\tinc = !touch %s/include\n' "$M" > .evil-include
evil() {
	cat <<EOF
[core]
	bare = false
	fsmonitor = "touch $M/fsmonitor #"
	hooksPath = $WT/.evil-hooks
	pager = "touch $M/pager; cat"
	sshCommand = "touch $M/ssh #"
[alias]
	st = "!touch $M/alias"
[include]
	path = $WT/.evil-include
[remote "origin"]
	url = ssh://git@example.invalid/x.git
EOF
}
evilrepo() { git clone -q --bare --no-hardlinks "$CD" "$1" && evil >> "$1/config"; }
`

// gitProbe is a plain git command a person runs in a worktree, and the marker that the
// planted configuration makes it create.
type gitProbe struct {
	marker string
	args   []string
	tty    bool // stdout is a terminal, so git starts its pager
}

var gitProbes = []gitProbe{
	{"fsmonitor", []string{"status"}, false},
	{"fsmonitor", []string{"diff"}, false},
	{"hooks", []string{"commit", "-q", "--allow-empty", "-m", "host commit"}, false},
	{"pager", []string{"log", "-1"}, true},
	{"alias", []string{"st"}, false},
	{"include", []string{"inc"}, false},
	{"ssh", []string{"fetch", "-q", "origin"}, false},
}

func (e *taskEnv) probe(dir string) {
	e.t.Helper()
	for _, p := range gitProbes {
		if p.tty {
			e.gitTTY(dir, p.args...)
		} else {
			e.run(dir, append([]string{"git"}, p.args...)...)
		}
	}
}

// gitRoute is one way for a harness to plant configuration.
type gitRoute struct {
	name  string
	plant string           // shell, run by the harness after harnessPrelude
	user  func(e *taskEnv) // what the person does on the host before the probes
	dirs  []string         // where the probes run, relative to the worktree ("" = top)
	check func(e *taskEnv) // more to verify afterwards
	extra []gitProbe       // more probes for this route
}

var gitRoutes = []gitRoute{
	{name: "dotgit-rewritten",
		plant: `evilrepo "$WT/.evil"; printf 'gitdir: %s/.evil\n' "$WT" > .git`},
	{name: "dotgit-directory",
		plant: `rm -f .git && evilrepo .git`},
	{name: "dotgit-directory-own-hooks",
		plant: `rm -f .git && git clone -q --bare --no-hardlinks "$CD" .git && git --git-dir=.git config core.bare false &&
cp .evil-hooks/* .git/hooks/`},
	{name: "dotgit-symlink",
		plant: `evilrepo "$WT/.evil"; rm -f .git && ln -s .evil .git`},
	{name: "commondir-rewritten",
		plant: `evilrepo "$WT/.evilcommon"; printf '%s\n' "$WT/.evilcommon" > "$AD/commondir"`},
	{name: "commondir-removed",
		plant: `git clone -q --bare --no-hardlinks "$CD" "$TMPDIR/c" && cp -r "$TMPDIR/c/objects" "$TMPDIR/c/refs" "$AD/" &&
{ cp "$TMPDIR/c/packed-refs" "$AD/" 2>/dev/null; evil > "$AD/config"; rm -f "$AD/commondir"; }`},
	{name: "gitdir-elsewhere",
		// git worktree repair, run in the main checkout, writes a .git file wherever
		// gitdir points: a host write outside everything the harness may write.
		plant: `printf '%s/.git\n' '@VICTIM@' > "$AD/gitdir"`,
		user: func(e *taskEnv) {
			e.run(e.repo, "git", "worktree", "repair")
			e.run(e.repo, "git", "worktree", "prune")
		},
		check: func(e *taskEnv) {
			if _, err := os.Lstat(filepath.Join(e.base, "victim", ".git")); err == nil {
				e.t.Errorf("git worktree repair wrote %s/victim/.git, where the harness's gitdir pointed", e.base)
			}
			if list := e.mustGit(e.repo, "worktree", "list"); !strings.Contains(list, e.worktree) {
				e.t.Errorf("the task's worktree is no longer registered:\n%s", list)
			}
		}},
	{name: "gitdir-missing",
		// git worktree prune, which autobox runs, would drop the worktree's registration.
		plant: `printf '/nonexistent/.git\n' > "$AD/gitdir"`,
		user: func(e *taskEnv) {
			if code, out := e.autobox("workspace"); code != 0 {
				e.t.Errorf("task workspace after the harness pointed gitdir nowhere: exit %d\n%s", code, out)
			}
		}},
	{name: "config-worktree-extension-enabled-later",
		// Harmless while the repository lacks extensions.worktreeConfig; the person turns
		// it on later (say, for a sparse checkout).
		plant: `evil > "$AD/config.worktree"`,
		user: func(e *taskEnv) {
			e.mustGit(e.repo, "config", "extensions.worktreeConfig", "true")
		}},
	{name: "submodule",
		plant: `git init -q sub && git -C sub commit -q --allow-empty -m sub && evil >> sub/.git/config &&
git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub && git commit -qm "add submodule"`,
		dirs: []string{"", "sub"}},
	{name: "nested-repository",
		// `git add -A` of the harness's work makes an embedded repository a gitlink, which
		// status then enters.
		plant: `mkdir -p vendor && git init -q vendor/lib && git -C vendor/lib commit -q --allow-empty -m lib &&
evil >> vendor/lib/.git/config`,
		user: func(e *taskEnv) { e.run(e.worktree, "git", "add", "-A") },
		dirs: []string{"", "vendor/lib"}},
	{name: "submodule-gitdir-in-admin",
		plant: `evilrepo "$AD/modules/sub" && git --git-dir="$AD/modules/sub" config core.worktree "$WT/sub" && mkdir sub &&
printf 'gitdir: %s\n' "$AD/modules/sub" > sub/.git && git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),sub`,
		check: func(e *taskEnv) {
			if _, err := os.Lstat(filepath.Join(e.admin(), "modules")); err == nil {
				e.t.Errorf("%s/modules, which the harness wrote, is still there", e.admin())
			}
		}},
	{name: "unfinished-rebase",
		// The harness stops its rebase at a break; continuing it runs the exec line.
		plant: `echo more >> work.txt && git commit -qam more &&
printf '#!/bin/sh\n{ printf "break\\nexec touch %s/rebase\\n"; cat "$1"; } > "$1.new" && mv "$1.new" "$1"\n' "$M" > "$TMPDIR/editor" &&
chmod +x "$TMPDIR/editor" && GIT_SEQUENCE_EDITOR="$TMPDIR/editor" git rebase -q -i HEAD~1; test -d "$AD/rebase-merge"`,
		extra: []gitProbe{{"rebase", []string{"rebase", "--continue"}, false}},
		check: func(e *taskEnv) {
			if got := e.mustGit(e.repo, "log", "-1", "--format=%s", "autobox/"+e.id); got != "more" {
				e.t.Errorf("the task branch's tip is %q, want the harness's last commit", got)
			}
		}},
	{name: "attributes-only-name-configured-drivers",
		// Not a route: attributes name drivers, whose commands only configuration defines.
		// It passes before the fix too and shows that nothing else is needed for them.
		plant: `printf '* filter=evil diff=evil merge=evil\n' > .gitattributes && echo text > attr.txt &&
git add -A && git commit -qm attributes`,
		extra: []gitProbe{{"attributes", []string{"add", "--renormalize", "."}, false}, {"attributes", []string{"diff", "HEAD~1"}, false}}},
}

func TestTaskNativeGitEscapes(t *testing.T) {
	requireSandbox(t)
	for _, u := range taskUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			t.Run("control", func(t *testing.T) { testGitControl(t, u) })
			for _, r := range gitRoutes {
				t.Run(r.name, func(t *testing.T) { testGitRoute(t, u, r) })
			}
		})
	}
}

// The control: the same configuration in a worktree of the person's own makes every probe
// create its marker.
func testGitControl(t *testing.T, u taskUser) {
	e := newTaskEnv(t, u)
	wt := filepath.Join(e.home, "control")
	e.mustGit(e.repo, "worktree", "add", "-q", "-b", "control", wt)
	script := strings.ReplaceAll(harnessPrelude, "@MARKERS@", e.markers) + `evil >> "$CD/config"`
	if code, out := e.run(wt, "/bin/sh", "-c", script); code != 0 {
		t.Fatalf("control setup: exit %d\n%s", code, out)
	}
	e.probe(wt)
	want := []string{"alias", "fsmonitor", "hooks", "include", "pager", "ssh"}
	if got := e.markersMade(); !slices.Equal(got, want) {
		t.Fatalf("control: markers %v, want %v: a probe does not detect what it should", got, want)
	}
}

func testGitRoute(t *testing.T, u taskUser, r gitRoute) {
	e := newTaskEnv(t, u)
	script := strings.NewReplacer("@MARKERS@", e.markers, "@VICTIM@", filepath.Join(e.base, "victim")).Replace(harnessPrelude + r.plant + "\nexit 0\n")
	code, out := e.runNative(script)
	if code != 0 {
		t.Fatalf("harness: exit %d\n%s", code, out)
	}
	t.Logf("task run:\n%s", out)
	e.checkAfterRun(r)
}

// checkAfterRun runs the person's steps and the probes, then checks that no marker exists,
// that the harness's commit is on its branch, and that the person can still commit.
func (e *taskEnv) checkAfterRun(r gitRoute) {
	e.t.Helper()
	if r.user != nil {
		r.user(e)
	}
	dirs := r.dirs
	if dirs == nil {
		dirs = []string{""}
	}
	for _, d := range dirs {
		dir := filepath.Join(e.worktree, d)
		e.probe(dir)
		for _, p := range r.extra {
			e.run(dir, append([]string{"git"}, p.args...)...)
		}
	}
	if m := e.markersMade(); len(m) > 0 {
		e.t.Errorf("host git ran commands the harness planted: markers %v", m)
	}
	if r.check != nil {
		r.check(e)
	}
	if log := e.mustGit(e.repo, "log", "--format=%s", "autobox/"+e.id); !strings.Contains(log, "harness work") {
		e.t.Errorf("the harness's commit is not on its branch:\n%s", log)
	}
	if e.mustGit(e.worktree, "log", "-1", "--format=%s") != "host commit" {
		e.t.Errorf("the person's commit in the worktree did not happen")
	}
	if code, out := e.autobox("workspace"); code != 0 {
		e.t.Errorf("task workspace: exit %d\n%s", code, out)
	}
	if strings.Contains(e.mustGit(e.worktree, "status", "--porcelain"), ".git") {
		e.t.Errorf("status lists a .git")
	}
}

// With extensions.worktreeConfig the native kind refuses to run: config.worktree would be
// in the admin directory the harness writes.
func TestTaskNativeRefusesWorktreeConfig(t *testing.T) {
	requireSandbox(t)
	e := newTaskEnv(t, taskUsers(t)[0])
	e.mustGit(e.repo, "config", "extensions.worktreeConfig", "true")
	code, out := e.runNative(`echo ran > ran`)
	if code == 0 || !strings.Contains(out, "worktreeConfig") || e.worktree != "" {
		t.Fatalf("task run with extensions.worktreeConfig: exit %d, worktree %q\n%s", code, e.worktree, out)
	}
	// Positive control: without it, the same run works.
	e.mustGit(e.repo, "config", "--unset", "extensions.worktreeConfig")
	if code, out := e.runNative(`echo ran > ran`); code != 0 {
		t.Fatalf("task run: exit %d\n%s", code, out)
	}
}

// startNative starts script as a native task's harness and waits until the file ready (in
// the worktree) exists. wait returns the run's status and output.
func (e *taskEnv) startNative(script, ready string) (proc *os.Process, wait func() (int, string)) {
	e.t.Helper()
	cmd := e.cmd(e.t.Context(), e.base, e.bin, "task", "run", "--project", e.repo, "--tasks-dir", e.tasks,
		"--id", e.id, "--kind", "native", "--", "/bin/sh", "-c", script)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	e.t.Cleanup(func() { cmd.Process.Kill(); <-done })
	for {
		e.locate()
		if e.worktree != "" {
			if _, err := os.Stat(filepath.Join(e.worktree, ready)); err == nil {
				break
			}
		}
		select {
		case <-done:
			e.t.Fatalf("task run ended before %s existed:\n%s", ready, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return cmd.Process, func() (int, string) {
		<-done
		return cmd.ProcessState.ExitCode(), out.String()
	}
}

// waitForGo is shell that waits (at most a minute) until the test creates .go.
const waitForGo = `
i=0; while [ ! -e "$WT/.go" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
`

// While the harness runs, its link files are immutable where autobox runs as root: it can
// neither write, replace, link nor unpin them, so host git run meanwhile is not redirected.
func TestTaskNativeGitDuringRun(t *testing.T) {
	requireSandbox(t)
	u := taskUsers(t)[0]
	if u.cred != nil || os.Geteuid() != 0 {
		t.Skip("autobox pins link files only when it runs as root")
	}
	e := newTaskEnv(t, u)
	if !canPin(e.base) {
		t.Skip("this filesystem has no immutable attribute: autobox cannot pin link files here")
	}
	try := `evilrepo "$WT/.evil"
for f in .git "$AD/commondir" "$AD/gitdir"; do
	printf 'gitdir: %s/.evil\n' "$WT" > "$f" && echo "wrote $f"
	printf x >> "$f" && echo "appended $f"
	ln -f "$f" "$f.link" && echo "linked $f"
	mv -f "$f" "$f.moved" && echo "moved $f"
	rm -f "$f" && echo "removed $f"
	chattr -i "$f" && echo "unpinned $f"
done > "$WT/.tried" 2>&1
touch "$WT/.planted"` + waitForGo
	script := strings.ReplaceAll(harnessPrelude, "@MARKERS@", e.markers) + try
	_, wait := e.startNative(script, ".planted")
	e.probe(e.worktree)
	if m := e.markersMade(); len(m) > 0 {
		t.Errorf("host git ran commands the harness planted while it ran: markers %v", m)
	}
	if !immutable(filepath.Join(e.worktree, ".git")) {
		t.Errorf(".git is not immutable while the harness runs")
	}
	tried, _ := os.ReadFile(filepath.Join(e.worktree, ".tried"))
	os.WriteFile(filepath.Join(e.worktree, ".go"), nil, 0o644)
	if code, out := wait(); code != 0 {
		t.Fatalf("harness: exit %d\n%s", code, out)
	}
	for _, verb := range []string{"wrote", "appended", "linked", "moved", "removed", "unpinned"} {
		if strings.Contains(string(tried), verb+" ") {
			t.Errorf("the harness changed a link file:\n%s", tried)
			break
		}
	}
	if !strings.Contains(string(tried), "Operation not permitted") {
		t.Errorf("want the harness's attempts refused with EPERM:\n%s", tried)
	}
	// Positive control: after the run the pins are gone and the person can commit.
	if immutable(filepath.Join(e.worktree, ".git")) || immutable(filepath.Join(e.admin(), "gitdir")) {
		t.Errorf("link files still immutable after the run")
	}
	e.mustGit(e.worktree, "commit", "-q", "--allow-empty", "-m", "host commit")
}

// config.worktree planted while extensions.worktreeConfig was off, and the person turns it
// on while the harness still runs: once the run ends, the file is gone.
func TestTaskNativeGitWorktreeConfigEnabledDuringRun(t *testing.T) {
	requireSandbox(t)
	for _, u := range taskUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			e := newTaskEnv(t, u)
			script := strings.ReplaceAll(harnessPrelude, "@MARKERS@", e.markers) +
				`evil > "$AD/config.worktree"; touch "$WT/.planted"` + waitForGo
			_, wait := e.startNative(script, ".planted")
			e.mustGit(e.repo, "config", "extensions.worktreeConfig", "true")
			e.run(e.worktree, "touch", ".go")
			if code, out := wait(); code != 0 {
				t.Fatalf("harness: exit %d\n%s", code, out)
			}
			e.checkAfterRun(gitRoute{})
		})
	}
}

// A run killed with SIGKILL checks nothing when it ends: the next autobox command that hands
// the worktree out does, and clears the pins the run left.
func TestTaskNativeGitKilledRun(t *testing.T) {
	requireSandbox(t)
	for _, u := range taskUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			e := newTaskEnv(t, u)
			script := strings.ReplaceAll(harnessPrelude, "@MARKERS@", e.markers) + `evilrepo "$WT/.evil"
printf 'gitdir: %s/.evil\n' "$WT" > .git
git init -q nested && git -C nested commit -q --allow-empty -m nested && evil >> nested/.git/config
touch "$WT/.planted"; sleep 600`
			proc, wait := e.startNative(script, ".planted")
			proc.Signal(syscall.SIGKILL)
			wait()
			code, out := e.autobox("workspace")
			if code != 0 || !strings.Contains(out, "nested/.git to ") {
				t.Fatalf("task workspace after a killed run: exit %d, want it to say it moved nested/.git\n%s", code, out)
			}
			if u.cred != nil && !strings.Contains(out, "restored "+filepath.Join(e.worktree, ".git")+": its content had changed") {
				t.Errorf("task workspace does not say it restored .git:\n%s", out)
			}
			if immutable(filepath.Join(e.worktree, ".git")) {
				t.Errorf("the killed run's pins are still there after task workspace")
			}
			e.checkAfterRun(gitRoute{dirs: []string{"", "nested"}})
		})
	}
}

// The docker kind hands out a worktree that its container could write (.git included);
// a fake docker plays the container, on the host.
func TestTaskDockerGitEscapes(t *testing.T) {
	for _, u := range taskUsers(t) {
		t.Run(u.name, func(t *testing.T) {
			e := newTaskEnv(t, u)
			docker := filepath.Join(e.base, "bin", "docker")
			body := strings.ReplaceAll(harnessPrelude, "@MARKERS@", e.markers) + `evilrepo "$WT/.evil"
printf 'gitdir: %s/.evil\n' "$WT" > .git
git init -q nested && git -C nested commit -q --allow-empty -m nested && evil >> nested/.git/config
exit 0`
			fake := "#!/bin/sh\n[ \"$1\" = run ] || exit 0\n" +
				"while [ $# -gt 0 ]; do case \"$1\" in -w) cd \"$2\"; shift 2;; *) shift;; esac; done\n" + body
			if err := os.WriteFile(docker, []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			code, out := e.autobox("run", "--kind", "docker", "--image", "img", "--docker", docker, "--", "harness")
			if code != 0 {
				t.Fatalf("task run --kind docker: exit %d\n%s", code, out)
			}
			t.Logf("task run:\n%s", out)
			e.locate()
			e.checkAfterRun(gitRoute{dirs: []string{"", "nested"}})
		})
	}
}

package task

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fakeDocker puts a `docker` on PATH that appends its argv (one argument a line, then a
// line "--") to the returned log, and for `run` prints API_KEY from its environment.
func fakeDocker(t *testing.T) (log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "argv.log")
	script := "#!/bin/sh\n" +
		"for a in \"$@\"; do printf '%s\\n' \"$a\"; done >> \"$FAKE_DOCKER_LOG\"\n" +
		"printf -- '--\\n' >> \"$FAKE_DOCKER_LOG\"\n" +
		"if [ \"$1\" = run ]; then printf 'API_KEY=%s\\n' \"$API_KEY\"; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_DOCKER_LOG", log)
	return log
}

// dockerCalls reads the fake docker's log: one argv per call.
func dockerCalls(t *testing.T, log string) [][]string {
	t.Helper()
	data, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	var cur []string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "--" {
			calls = append(calls, cur)
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return calls
}

// golden compares got (one argument a line, with the test's paths replaced by names) to
// testdata/name.golden.
func golden(t *testing.T, name string, got []string, repl *strings.Replacer) {
	t.Helper()
	text := repl.Replace(strings.Join(got, "\n") + "\n")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("%s mismatch:\n--- got\n%s--- want\n%s", path, text, want)
	}
}

func TestDockerWrapGolden(t *testing.T) {
	log := fakeDocker(t)
	root, tasks := newRepo(t), tasksDir(t)
	cache := t.TempDir()
	minimal, err := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks}, Image: "example/harness:1"})
	if err != nil {
		t.Fatal(err)
	}
	full, err := NewDocker(&DockerOptions{
		Options: Options{Project: root, TasksDir: tasks},
		Image:   "example/harness:1",
		Mounts: []Mount{
			{Source: cache, Target: "/home/agent/.cache"},
			{Source: root, Target: "/src", ReadOnly: true},
		},
		User:    "1000:1000",
		Home:    "/home/agent",
		Env:     []string{"ANTHROPIC_API_KEY", "TERM"},
		RunArgs: []string{"--memory=4g", "--network=bridge"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := minimal.Path("t-1")
	name, _ := minimal.ContainerName("t-1")
	repl := strings.NewReplacer(wt, "$WORKTREE", cache, "$CACHE", root, "$ROOT", name, "$NAME")
	if !strings.HasPrefix(name, "autobox-proj-") || !strings.HasSuffix(name, "-t-1") {
		t.Fatalf("container name %q", name)
	}

	argv := []string{"claude", "-p", "fix the bug"}
	got, err := minimal.Wrap(argv, WrapOptions{ID: "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "docker_wrap_minimal", got, repl)

	env := []string{"ANTHROPIC_API_KEY=sk-secret-value", "MCP_URL=http://host.docker.internal:7777"}
	got, err = full.Wrap(argv, WrapOptions{ID: "t-1", Env: env, Cwd: wt})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "docker_wrap_full", got, repl)
	if joined := strings.Join(got, " "); strings.Contains(joined, "sk-secret") {
		t.Fatalf("a secret value is on the argv: %s", joined)
	}
	if calls := dockerCalls(t, log); len(calls) != 0 {
		t.Fatalf("Wrap ran docker: %q", calls) // Wrap is pure
	}
	mustExist(t, wt, false)
	if u, err := full.Endpoint(7777); err != nil || u != "http://host.docker.internal:7777" {
		t.Fatalf("Endpoint = %q, %v", u, err)
	}
}

func TestDockerOptionsChecked(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	base := Options{Project: root, TasksDir: tasks}
	bad := []*DockerOptions{
		nil,
		{Options: base, Image: "--privileged"},
		{Options: base, Image: "i", Env: []string{"A B"}},
		{Options: base, Image: "i", Env: []string{"TOKEN=on-the-argv"}},
		{Options: base, Image: "i", Mounts: []Mount{{Source: "relative", Target: "/x"}}},
		{Options: base, Image: "i", Mounts: []Mount{{Source: root, Target: "/x:rw"}}},
		{Options: base, Image: "i", Home: "home"},
	}
	for i, o := range bad {
		if _, err := NewDocker(o); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: NewDocker = %v, want ErrInvalid", i, err)
		}
	}
	// Without an image a task can be stopped and cleaned up, not run.
	d, err := NewDocker(&DockerOptions{Options: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wrap([]string{"harness"}, WrapOptions{ID: "k"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Wrap without an image = %v, want ErrInvalid", err)
	}
}

func TestDockerLifecycleAgainstFakeDocker(t *testing.T) {
	log := fakeDocker(t)
	root, tasks := newRepo(t), tasksDir(t)
	ctx := context.Background()
	d, err := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks}, Image: "img", Env: []string{"API_KEY"}})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := d.ContainerName("k")
	cwd := workspaceT(t, d, "k")
	calls := dockerCalls(t, log)
	if len(calls) != 1 || strings.Join(calls[0], " ") != "rm -f "+name {
		t.Fatalf("Workspace ran docker %q, want one `rm -f %s`", calls, name)
	}

	// Run: the secret reaches docker through its environment, not its argv.
	var out bytes.Buffer
	pr, err := d.start([]string{"harness"}, WrapOptions{ID: "k", Cwd: cwd, Env: []string{"API_KEY=sk-123"}}, stdio{out: &out, err: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if code, err := pr.wait(); code != 0 || err != nil {
		t.Fatalf("fake docker run: %d, %v", code, err)
	}
	if got := out.String(); got != "API_KEY=sk-123\n" {
		t.Fatalf("fake docker saw %q", got)
	}
	calls = dockerCalls(t, log)
	run := strings.Join(calls[1], " ")
	if !strings.Contains(run, " -e API_KEY ") || strings.Contains(run, "sk-123") {
		t.Fatalf("docker run argv: %s", run)
	}
	// However the client ended, its container is removed after it.
	if got := strings.Join(calls[2], " "); got != "rm -f "+name {
		t.Fatalf("after the run docker ran %q, want rm -f %s", got, name)
	}

	if err := d.Stop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	wantCalls(t, log, 3, "stop -t 10 "+name, "rm -f "+name)

	// Dirty and unforced: nothing is removed, the container included.
	writeFile(t, filepath.Join(cwd, "wip"), "x")
	res, err := d.Cleanup(ctx, "k", false)
	if err != nil || res.Removed || !res.Dirty {
		t.Fatalf("unforced Cleanup = %+v, %v", res, err)
	}
	if n := len(dockerCalls(t, log)); n != 5 {
		t.Fatalf("refused Cleanup ran docker: %q", dockerCalls(t, log)[5:])
	}
	res, err = d.Cleanup(ctx, "k", true)
	if err != nil || !res.Removed {
		t.Fatalf("forced Cleanup = %+v, %v", res, err)
	}
	wantCalls(t, log, 5, "stop -t 10 "+name, "rm -f "+name)
	// A task whose worktree is gone still gets its stray container removed.
	if res, err = d.Cleanup(ctx, "k", false); err != nil || res != (CleanupResult{}) {
		t.Fatalf("Cleanup of a missing task = %+v, %v", res, err)
	}
	wantCalls(t, log, 7, "stop -t 10 "+name, "rm -f "+name)
}

// wantCalls checks the fake docker's calls from the from-th on.
func wantCalls(t *testing.T, log string, from int, want ...string) {
	t.Helper()
	calls := dockerCalls(t, log)
	var got []string
	for _, c := range calls[min(from, len(calls)):] {
		got = append(got, strings.Join(c, " "))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("docker calls from %d: %q, want %q", from, got, want)
	}
}

func TestDockerMissingClientIsAnError(t *testing.T) {
	d, err := NewDocker(&DockerOptions{Options: Options{Project: newRepo(t), TasksDir: tasksDir(t)},
		Image: "img", Docker: filepath.Join(t.TempDir(), "no-docker")})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(context.Background(), "k"); err == nil {
		t.Fatal("Stop with no docker client succeeded")
	}
}

// TestDockerStopUsesRecordedKind: stop and cleanup of a docker task without --kind (as
// the help's examples give them) stop and remove its container with the client the task
// was made with, and --kind worktree for it is refused rather than leave the container.
func TestDockerStopUsesRecordedKind(t *testing.T) {
	log := fakeDocker(t)
	root, tasks := newRepo(t), tasksDir(t)
	client := filepath.Join(filepath.Dir(log), "docker") // a path, not the name on PATH
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Main(append(args, "--project", root, "--tasks-dir", tasks), nil, &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := run("workspace", "--kind", "docker", "--docker", client, "--id", "k"); code != 0 {
		t.Fatalf("workspace: %d %s", code, out)
	}
	d, _ := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks}})
	name, _ := d.ContainerName("k")
	if code, out := run("stop", "--id", "k", "--stop-grace", "2s"); code != 0 {
		t.Fatalf("stop: %d %s", code, out)
	}
	wantCalls(t, log, 1, "stop -t 2 "+name, "rm -f "+name)
	if code, out := run("cleanup", "--id", "k", "--kind", "worktree"); code != exitUsage || !strings.Contains(out, "would leave its container running") {
		t.Fatalf("cleanup --kind worktree of a docker task: %d %s", code, out)
	}
	if code, out := run("cleanup", "--id", "k"); code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("cleanup: %d %s", code, out)
	}
	wantCalls(t, log, 3, "stop -t 10 "+name, "rm -f "+name)
}

// TestDockerUserGetsWorktree: --user UID:GID is given the worktree before the harness
// starts: its files and directories, the top directory's group (group-writable, its
// owner kept for host git), not the .git link file, and not a file with another hard
// link (which may be outside the worktree).
func TestDockerUserGetsWorktree(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to another uid")
	}
	root, tasks := newRepo(t), tasksDir(t)
	d, err := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks}, Image: "img", User: "1000:1001"})
	if err != nil {
		t.Fatal(err)
	}
	wt := workspaceT(t, d, "u")
	writeFile(t, filepath.Join(wt, "new.txt"), "x")
	outside := filepath.Join(t.TempDir(), "outside")
	writeFile(t, outside, "secret")
	if err := os.Link(outside, filepath.Join(wt, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := d.mapOwner(wt); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (int, int) {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		return int(st.Uid), int(st.Gid)
	}
	for _, rel := range []string{"README", "new.txt"} {
		if u, g := owner(filepath.Join(wt, rel)); u != 1000 || g != 1001 {
			t.Errorf("%s: %d:%d, want 1000:1001", rel, u, g)
		}
	}
	for _, p := range []string{filepath.Join(wt, ".git"), outside} {
		if u, _ := owner(p); u != 0 {
			t.Errorf("%s was given away: uid %d", p, u)
		}
	}
	fi, _ := os.Stat(wt)
	if u, g := owner(wt); u != 0 || g != 1001 || fi.Mode().Perm()&0o070 != 0o070 {
		t.Errorf("the worktree's top: %d:%d %v, want root's, group 1001 and group-writable", u, g, fi.Mode().Perm())
	}
	// A name, not a uid: passed to docker as it is, nothing given.
	named, _ := NewDocker(&DockerOptions{Options: Options{Project: root, TasksDir: tasks}, Image: "img", User: "agent"})
	if err := named.mapOwner(wt); err != nil {
		t.Errorf("--user agent: %v", err)
	}
}

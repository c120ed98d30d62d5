package task

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testnet"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// newNative skips when this host cannot enforce the sandbox (jail says what is missing).
func newNative(t *testing.T, root, tasks string, o *NativeOptions) *Native {
	t.Helper()
	if err := jail.Probe().Check(&policy.Sandbox{}); err != nil {
		t.Skipf("native sandbox not enforceable here: %v", err)
	}
	if o == nil {
		o = &NativeOptions{}
	}
	o.Project, o.TasksDir = root, tasks
	n, err := NewNative(o)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type sandboxRunner interface {
	run(ctx context.Context, id string, argv []string, o WrapOptions, s stdio) (int, error)
}

// runScript runs a shell script as task id's harness and returns its status and output.
func runScript(t *testing.T, r sandboxRunner, id, script string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code, err := r.run(context.Background(), id, []string{"/bin/sh", "-c", script}, WrapOptions{}, stdio{out: &out, err: &out})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return code, out.String()
}

// A harness-like script edits its worktree and commits on its branch, with git as the
// harness would use it (status, add, commit, log), inside the sandbox.
func TestNativeHarnessCommitsOnItsBranch(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	gitT(t, root, "config", "user.name", "Native Test")
	gitT(t, root, "config", "user.email", "native@example.invalid")
	n := newNative(t, root, tasks, nil)
	before := gitT(t, root, "rev-parse", "main")
	script := `set -e
echo "feature" > feature.txt
mkdir -p src && echo "code" > src/a.go
git status --porcelain >/dev/null
git add -A
git commit -q -m "task work"
echo "second" >> feature.txt
git commit -q -am "more work"
git log --oneline | wc -l > "$TMPDIR/count"
echo "home" > "$HOME/.harnessrc"`
	code, out := runScript(t, n, "c1", script)
	if code != 0 {
		t.Fatalf("harness exited %d:\n%s", code, out)
	}
	count, err := os.ReadFile(filepath.Join(n.paths("c1").scratch, "tmp", "count"))
	if err != nil || strings.TrimSpace(string(count)) != "3" {
		t.Fatalf("git log inside saw %q commits (%v), want 3", count, err)
	}
	if got := gitT(t, root, "log", "--format=%s|%an", "-2", "autobox/c1"); got != "more work|Native Test\ntask work|Native Test" {
		t.Fatalf("branch autobox/c1 log:\n%s", got)
	}
	if got := gitT(t, root, "show", "autobox/c1:src/a.go"); got != "code" {
		t.Fatalf("committed src/a.go = %q", got)
	}
	if got := gitT(t, root, "rev-parse", "main"); got != before {
		t.Fatalf("main moved: %s -> %s", before, got)
	}
	if got := gitT(t, root, "fsck", "--no-dangling"); got != "" {
		t.Fatalf("fsck: %s", got)
	}
	// The worktree is clean from the host's view too.
	infos, err := n.List(context.Background())
	if err != nil || len(infos) != 1 || infos[0].Dirty || infos[0].Kind != KindNative || infos[0].Branch != "autobox/c1" {
		t.Fatalf("List = %+v, %v", infos, err)
	}
}

// Every write the issue forbids is denied in the sandbox, and the same script succeeds under
// the worktree kind (positive control), which proves the probe itself works.
func TestNativeDenials(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	// An identity of the repository's own: the positive controls commit, and
	// the user running the tests may have none.
	gitT(t, root, "config", "user.name", "Native Test")
	gitT(t, root, "config", "user.email", "native@example.invalid")
	g := filepath.Join(root, ".git")
	outside := t.TempDir()
	ctx := context.Background()
	n := newNative(t, root, tasks, nil)
	host := newWT(t, root, tasks)
	other := workspaceT(t, host, "other")
	mainTip := gitT(t, root, "rev-parse", "main")
	config, _ := os.ReadFile(filepath.Join(g, "config"))
	headFile, _ := os.ReadFile(filepath.Join(g, "HEAD"))
	gitConfig := func(key string) string { out, _ := git(ctx, root, nil, "config", key); return out }
	fileHas := func(path, s string) func() bool {
		return func() bool { data, _ := os.ReadFile(path); return strings.Contains(string(data), s) }
	}
	restore := func(path string, data []byte) func() { return func() { os.WriteFile(path, data, 0o644) } }
	const id = "probe"
	probes := []struct {
		name, script string
		effect       func() bool
		undo         func()
	}{
		{"write .git/hooks", `printf '#!/bin/sh\necho pwned\n' > ` + g + `/hooks/post-commit && chmod +x ` + g + `/hooks/post-commit`,
			func() bool { return fileExists(filepath.Join(g, "hooks", "post-commit")) },
			func() { os.Remove(filepath.Join(g, "hooks", "post-commit")) }},
		{"git config core.fsmonitor", `git config core.fsmonitor "touch /pwned"`,
			func() bool { return gitConfig("core.fsmonitor") != "" },
			func() { gitT(t, root, "config", "--unset", "core.fsmonitor") }},
		{"append to .git/config", `printf '[core]\n\thooksPath = /pwned\n' >> ` + g + `/config`,
			fileHas(filepath.Join(g, "config"), "pwned"), restore(filepath.Join(g, "config"), config)},
		{"move another branch", `git commit -q --allow-empty -m probe && git update-ref refs/heads/main HEAD`,
			func() bool { return gitT(t, root, "rev-parse", "main") != mainTip },
			func() { gitT(t, root, "update-ref", "refs/heads/main", mainTip) }},
		{"create a branch", `git branch probe-new`,
			func() bool { ok, _ := branchExists(ctx, root, "probe-new"); return ok },
			func() { gitT(t, root, "branch", "-D", "probe-new") }},
		{"create a tag", `git tag probe-tag`,
			func() bool {
				_, err := git(ctx, root, nil, "rev-parse", "--verify", "-q", "refs/tags/probe-tag")
				return err == nil
			},
			func() { gitT(t, root, "tag", "-d", "probe-tag") }},
		{"rewrite the main checkout's HEAD", `echo 'ref: refs/heads/pwned' > ` + g + `/HEAD`,
			fileHas(filepath.Join(g, "HEAD"), "pwned"), restore(filepath.Join(g, "HEAD"), headFile)},
		{"write the main checkout", `echo pwned > ` + root + `/pwned`,
			func() bool { return fileExists(filepath.Join(root, "pwned")) },
			func() { os.Remove(filepath.Join(root, "pwned")) }},
		{"write another task's worktree", `echo pwned > ` + other + `/pwned`,
			func() bool { return fileExists(filepath.Join(other, "pwned")) },
			func() { os.Remove(filepath.Join(other, "pwned")) }},
		{"write outside", `echo pwned > ` + outside + `/pwned`,
			func() bool { return fileExists(filepath.Join(outside, "pwned")) },
			func() { os.Remove(filepath.Join(outside, "pwned")) }},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			code, out := runScript(t, n, id, p.script)
			if code == 0 || p.effect() {
				p.undo()
				t.Fatalf("sandboxed probe: exit %d, effect %v, want denied:\n%s", code, p.effect(), out)
			}
			if code, out := runScript(t, host, id, p.script); code != 0 || !p.effect() {
				t.Fatalf("positive control (worktree kind): exit %d, effect %v:\n%s", code, p.effect(), out)
			}
			p.undo()
		})
	}
}

func TestNativeNetwork(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	ln := testnet.TCP(t)
	port := ln.Addr().(*net.TCPAddr).Port
	on := newNative(t, root, tasks, nil)
	url, err := on.Endpoint(port)
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("Endpoint = %q, %v", url, err)
	}
	probe := `exec /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(port) + `'`
	if code, out := runScript(t, on, "net", probe); code != 0 {
		t.Fatalf("connect with network on: exit %d:\n%s", code, out)
	}
	off := newNative(t, root, tasks, &NativeOptions{NoNetwork: true})
	if code, _ := runScript(t, off, "net", probe); code == 0 {
		t.Fatal("connect with --no-network succeeded")
	}
	if _, err := off.Endpoint(port); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Endpoint with no network = %v", err)
	}
}

// The orchestrator path: spawn Wrap's argv (the test binary plays autobox), pass a secret
// through the environment, then Stop from another process kills the whole tree, including
// processes that called setsid, double-forked and ignore SIGTERM.
func TestNativeWrapRunAndStop(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	n := newNative(t, root, tasks, &NativeOptions{Env: []string{"PROBE_SECRET"}})
	marker := strconv.Itoa(100000+os.Getpid()) + ".5" // a sleep length no other test run uses
	script := `echo "$PROBE_SECRET" > secret
setsid sh -c 'trap "" TERM; sleep ` + marker + `' &
(sh -c 'trap "" TERM; sleep ` + marker + `' &)
trap "" TERM
touch started
sleep ` + marker
	argv, err := n.Wrap([]string{"/bin/sh", "-c", script}, WrapOptions{ID: "bg", Env: []string{"EXTRA=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(argv, " "), "s3cret") {
		t.Fatal("secret on the argv")
	}
	wt, _ := n.Path("bg")
	exited, out := spawnUntil(t, argv, []string{"PROBE_SECRET=s3cret", "EXTRA=1"}, filepath.Join(wt, "started"))
	if data, _ := os.ReadFile(filepath.Join(wt, "secret")); string(data) != "s3cret\n" {
		t.Fatalf("harness saw PROBE_SECRET=%q", data)
	}
	// The wrapper, the shells and the three sleeps carry the marker.
	if n := countProcs(t, marker); n < 3 {
		t.Fatalf("%d marker processes before Stop, want at least 3", n)
	}
	infos, err := n.List(context.Background())
	if err != nil || len(infos) != 1 || !infos[0].Running {
		t.Fatalf("List while running = %+v, %v", infos, err)
	}
	// A second run of the same task is refused while the first holds it.
	if _, err := n.run(context.Background(), "bg", []string{"true"}, WrapOptions{}, stdio{}); !errors.Is(err, ErrRunning) {
		t.Fatalf("second run = %v, want ErrRunning", err)
	}

	if err := n.Stop(context.Background(), "bg"); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil {
		t.Fatalf("stopped run exited 0\n%s", out.String())
	}
	if n := countProcs(t, marker); n != 0 {
		ps, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,sid,stat,args").CombinedOutput()
		t.Fatalf("%d marker processes left after Stop\n%s\n%s", n, ps, out.String())
	}
	if err := n.Stop(context.Background(), "bg"); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// countProcs counts live processes whose command line contains marker.
func countProcs(t *testing.T, marker string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i:]), ") Z") {
			continue // a zombie is dead
		}
		n++
	}
	return n
}

func TestNativeRejectsUnsafeOptions(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	for _, rw := range []string{root, filepath.Join(root, ".git"), filepath.Dir(root), tasks} {
		if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}, ReadWrite: []string{rw}}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ReadWrite %s: %v, want ErrInvalid", rw, err)
		}
	}
	if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}, Env: []string{"K=v"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Env with a value: %v", err)
	}
	gitT(t, root, "config", "extensions.worktreeConfig", "true")
	if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("worktreeConfig repository: %v, want ErrUnsupported", err)
	}
	// Positive control: an unrelated writable path is fine.
	gitT(t, root, "config", "--unset", "extensions.worktreeConfig")
	if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}, ReadWrite: []string{t.TempDir()}}); err != nil {
		t.Fatal(err)
	}
}

// TestNativeRefusesLinkedPaths: --ro and --rw paths through a symbolic link are
// refused, not resolved. Every run gets the same flags, so a harness that can write
// a directory could otherwise plant a link where a later run's path passes and widen
// what that run may write (--rw a --rw a/b, a/b swapped for a link to a secret).
func TestNativeRefusesLinkedPaths(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	a, secret := t.TempDir(), t.TempDir()
	b := filepath.Join(a, "b")
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	// Positive control: both paths canonical, as the first run sees them.
	if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}, ReadWrite: []string{a, b}}); err != nil {
		t.Fatalf("canonical --rw paths: %v", err)
	}
	// The harness swaps b for a link to the secret; the next run's same flags.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, b); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]*NativeOptions{
		"--rw": {Options: Options{Project: root, TasksDir: tasks}, ReadWrite: []string{a, b}},
		"--ro": {Options: Options{Project: root, TasksDir: tasks}, ReadOnly: []string{b}},
	} {
		_, err := NewNative(o)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name+" "+b) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s through a link: %v, want ErrInvalid naming %s %s and the link", name, err, name, b)
		}
	}
}

func TestNativeWrapGolden(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	tools := t.TempDir()
	n, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks, Base: "main"},
		NoNetwork: true, ReadOnly: []string{tools}, Env: []string{"ANTHROPIC_API_KEY"}, Exe: "/opt/autobox/bin/autobox"})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := n.Path("t-1")
	before := readTree(t, tasks)
	got, err := n.Wrap([]string{"claude", "-p", "fix it"}, WrapOptions{ID: "t-1", Cwd: filepath.Join(wt, "sub"),
		Env: []string{"ANTHROPIC_API_KEY=sk-secret", "MCP_URL=http://127.0.0.1:7777"}})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "native_wrap", got, strings.NewReplacer(wt, "$WORKTREE", tasks, "$TASKS", root, "$ROOT", tools, "$TOOLS"))
	if strings.Contains(strings.Join(got, " "), "sk-secret") {
		t.Fatal("secret on the argv")
	}
	if after := readTree(t, tasks); !slices.Equal(before, after) {
		t.Fatalf("Wrap changed the tasks directory: %v -> %v", before, after)
	}
}

// TestNativeLimits: the harness's tree is held to its limits as exec_command's is:
// a fork past --max-processes fails with EAGAIN (where the host gives the tree a
// pids cgroup), one file past --max-write-mb with EFBIG, and writes past it in all
// kill the harness with the reason and its own exit status; just under each, the
// harness runs to its end.
func TestNativeLimits(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	n := newNative(t, root, tasks, &NativeOptions{Limits: &policy.Limits{Processes: 10, WriteBytes: 8 << 20, OpenFiles: 64}})
	code, out := runScript(t, n, "lim", `ulimit -n; dd if=/dev/zero of=one bs=1M count=9 status=none; echo dd=$?`)
	// stdout and stderr come through two pipes: "64" may follow dd's error.
	if code != 0 || !slices.Contains(strings.Split(out, "\n"), "64") || !strings.Contains(out, "File too large") || !strings.Contains(out, "dd=1") {
		t.Errorf("open files and one file past the write limit: status %d\n%s", code, out)
	}
	// The harness lives on after its writes: the watchdog looks every 10 ms,
	// but on a busy machine its look may come after a short script's end.
	code, out = runScript(t, n, "lim", `for i in 1 2 3 4; do dd if=/dev/zero of=f$i bs=1M count=3 status=none; sleep 0.05; done; sleep 30; echo wrote`)
	if code != exitDisk || !strings.Contains(out, "autobox task run: disk limit exceeded (") || !strings.Contains(out, "> --max-write-mb 8; watchdog)") || strings.Contains(out, "wrote") {
		t.Errorf("12 MB past --max-write-mb 8: status %d\n%s", code, out)
	}
	if code, out = runScript(t, n, "lim", `for i in $(seq 8); do sleep 0.2 & done; wait; echo done`); code != 0 || out != "done\n" {
		t.Errorf("8 sleeps under --max-processes 10: status %d\n%s", code, out)
	}
	// dash says "Cannot fork" for EAGAIN; where no pids cgroup refuses, the
	// watchdog kills instead.
	code, out = runScript(t, n, "lim", `for i in $(seq 12); do sleep 1 & done; wait; echo done`)
	if !(code == 2 && strings.Contains(out, "Cannot fork")) && code != exitProcesses {
		t.Errorf("12 sleeps under --max-processes 10: status %d\n%s", code, out)
	}
}

// TestNativeCPULimit: a harness past --cpu-ms is killed with the reason on its
// stderr and exit status 152, whether the watchdog or the kernel's RLIMIT_CPU
// (which once ended it with the status alone) got there first; a harness
// under it runs to its end.
func TestNativeCPULimit(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	n := newNative(t, root, tasks, &NativeOptions{Limits: &policy.Limits{Processes: 64, WriteBytes: 8 << 20, OpenFiles: 64, CPU: 500 * time.Millisecond}})
	if code, out := runScript(t, n, "cpu", `echo under`); code != 0 || out != "under\n" {
		t.Fatalf("a harness under --cpu-ms 500: status %d\n%s", code, out)
	}
	code, out := runScript(t, n, "cpu", `while :; do :; done`)
	if code != exitCPU || !strings.Contains(out, "autobox task run: cpu limit exceeded (") || !strings.Contains(out, "--cpu-ms 500") {
		t.Errorf("a busy loop past --cpu-ms 500: status %d\n%s", code, out)
	}
	// The kernel's end at RLIMIT_CPU is SIGXCPU, which the harness's shell
	// sends itself here: the race above may never show it.
	code, out = runScript(t, n, "cpu", `kill -XCPU $$`)
	if code != exitCPU || !strings.Contains(out, "autobox task run: cpu limit exceeded (a process used the 1 s of RLIMIT_CPU that --cpu-ms 500 gives each; killed by the kernel)") {
		t.Errorf("SIGXCPU under --cpu-ms 500: status %d\n%s", code, out)
	}
}

// TestNativeAllowHosts: with --allow-host the harness reaches the listed hosts
// through the proxy and nothing else: not the host's loopback directly, not a
// port the list does not name; a failed run's stderr says what was refused.
func TestNativeAllowHosts(t *testing.T) {
	if !jail.Isolations().PrivateNetwork {
		t.Skip("--allow-host needs a network namespace for the harness: root")
	}
	root, tasks := newRepo(t), tasksDir(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "through the proxy") }))
	defer srv.Close()
	hp := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := net.SplitHostPort(hp)
	n := newNative(t, root, tasks, &NativeOptions{AllowHosts: []string{hp}})
	if code, out := runScript(t, n, "net", "curl -sS "+srv.URL+"/"); code != 0 || out != "through the proxy" {
		t.Fatalf("an allowed host: exit %d: %s", code, out)
	}
	direct := `exec /bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + port + `'`
	if code, out := runScript(t, n, "net", direct); code == 0 {
		t.Fatalf("the host's loopback, around the proxy: exit 0: %s", out)
	}
	code, out := runScript(t, n, "net", "curl -sSf http://127.0.0.1:1/")
	if code == 0 || !strings.Contains(out, "[autobox: network denied:") || !strings.Contains(out, "127.0.0.1:1 (port 1 not allowed)") {
		t.Fatalf("a port not in the list: exit %d: %s", code, out)
	}
	if _, err := NewNative(&NativeOptions{Options: Options{Project: root, TasksDir: tasks}, AllowHosts: []string{"*:443"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad entry: %v", err)
	}
}

// TestNativeHidesEtcSecrets: a harness reads /etc as every command does, but
// for its secrets: a root harness (whose user could read /etc/shadow) is kept
// from it as exec_command is; the ordinary user's kernel keeps it anyway.
func TestNativeHidesEtcSecrets(t *testing.T) {
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Skip("no /etc/shadow on this host")
	}
	root, tasks := newRepo(t), tasksDir(t)
	n := newNative(t, root, tasks, nil)
	code, out := runScript(t, n, "etc", `head -c 4 /etc/shadow >/dev/null 2>&1 && echo read-shadow; head -c 4 /etc/passwd >/dev/null && echo read-passwd`)
	if code != 0 || strings.Contains(out, "read-shadow") || !strings.Contains(out, "read-passwd") {
		t.Errorf("the harness read /etc/shadow, or not /etc/passwd (the control): status %d\n%s", code, out)
	}
}

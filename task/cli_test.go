package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// mainT runs Main and returns its status, stdout and stderr.
func mainT(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLIUsage(t *testing.T) {
	root := newRepo(t)
	code, out, _ := mainT(t, "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "-no-network") {
		t.Fatalf("--help: %d\n%s", code, out)
	}
	usage := [][]string{
		{},
		{"frobnicate"},
		{"workspace", "--project", root},
		{"workspace", "--project", root, "--id", "../escape"},
		{"workspace", "--project", root, "--id", "a", "--kind", "vm"},
		{"workspace", "--project", root, "--id", "a", "--image", "x"},
		{"workspace", "--project", root, "--id", "a", "--port", "80"},
		{"workspace", "--project", root, "--id", "a", "extra"},
		{"endpoint", "--project", root, "--id", "a"},
		{"endpoint", "--project", root, "--id", "a", "--port", "70000"},
		{"wrap", "--project", root, "--id", "a"},
		{"wrap", "--project", root, "--id", "a", "--kind", "docker", "--", "x"},
		{"run", "--project", root, "--id", "a", "--no-network", "--", "true"},
		{"list", "--project", root, "--id", "a"},
		{"cleanup", "--project", root, "--id", "a", "--undefined-flag"},
	}
	for _, args := range usage {
		if code, _, errText := mainT(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errText)
		}
	}
}

func TestCLILifecycle(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	t.Setenv("AUTOBOX_TASKS_DIR", tasks) // the default when --tasks-dir is not given
	common := []string{"--project", root, "--id", "c"}

	var ws struct{ ID, Cwd, Branch string }
	for i := 0; i < 2; i++ {
		code, out, errText := mainT(t, append([]string{"workspace", "--json"}, common...)...)
		if code != 0 {
			t.Fatalf("workspace: %d %s", code, errText)
		}
		var got struct{ ID, Cwd, Branch string }
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if i == 1 && got != ws {
			t.Fatalf("second workspace %+v != first %+v", got, ws)
		}
		ws = got
	}
	if !strings.HasPrefix(ws.Cwd, tasks+"/proj-") || ws.Branch != "autobox/c" {
		t.Fatalf("workspace = %+v", ws)
	}

	code, out, _ := mainT(t, append([]string{"run"}, append(common, "--", "/bin/sh", "-c", "pwd; echo dirty > wip; exit 7")...)...)
	if code != 7 || strings.TrimSpace(out) != ws.Cwd {
		t.Fatalf("run: exit %d, output %q; want 7 and the worktree", code, out)
	}

	code, out, _ = mainT(t, "list", "--project", root, "--json")
	var infos []Info
	if err := json.Unmarshal([]byte(out), &infos); code != 0 || err != nil {
		t.Fatalf("list: %d %v %s", code, err, out)
	}
	if len(infos) != 1 || infos[0].ID != "c" || infos[0].Kind != KindWorktree || infos[0].Branch != "autobox/c" ||
		!infos[0].Dirty || infos[0].Detail != "1 uncommitted file(s)" || infos[0].Running {
		t.Fatalf("list = %+v", infos)
	}
	if code, out, _ = mainT(t, "list", "--project", root); code != 0 || !strings.Contains(out, "1 uncommitted file(s)") {
		t.Fatalf("list text: %d\n%s", code, out)
	}

	code, out, _ = mainT(t, "endpoint", "--project", root, "--id", "c", "--port", "8700")
	if code != 0 || out != "http://127.0.0.1:8700\n" {
		t.Fatalf("endpoint: %d %q", code, out)
	}
	code, out, _ = mainT(t, "wrap", "--json", "--project", root, "--id", "c", "--kind", "docker", "--image", "img", "--env", "KEY", "--", "claude", "-p", "it's")
	var wrapped struct{ Argv []string }
	if err := json.Unmarshal([]byte(out), &wrapped); code != 0 || err != nil || wrapped.Argv[0] != "docker" ||
		wrapped.Argv[len(wrapped.Argv)-1] != "it's" {
		t.Fatalf("wrap --json: %d %v %s", code, err, out)
	}
	if code, out, _ = mainT(t, "wrap", "--project", root, "--id", "c", "--", "echo", "it's"); code != 0 || out != "echo 'it'\\''s'\n" {
		t.Fatalf("wrap text: %d %q", code, out)
	}
	if code, _, _ = mainT(t, append([]string{"stop"}, common...)...); code != 0 {
		t.Fatalf("stop: %d", code)
	}

	code, out, _ = mainT(t, append([]string{"cleanup", "--json"}, common...)...)
	var res CleanupResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitRefused ||
		res != (CleanupResult{Dirty: true, Detail: "1 uncommitted file(s)"}) {
		t.Fatalf("cleanup dirty: %d %+v %v", code, res, err)
	}
	mustExist(t, filepath.Join(ws.Cwd, "wip"), true)
	code, out, _ = mainT(t, append([]string{"cleanup", "--force"}, common...)...)
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("cleanup --force: %d %q", code, out)
	}
	mustExist(t, ws.Cwd, false)
	gitT(t, root, "rev-parse", "--verify", "autobox/c")
	if code, out, _ = mainT(t, append([]string{"cleanup", "--json"}, common...)...); code != 0 || out != `{"removed":false,"dirty":false}`+"\n" {
		t.Fatalf("cleanup of a missing task: %d %q", code, out)
	}
	if _, err := os.Stat(tasks); err != nil {
		t.Fatal(err)
	}
}

// `autobox task stop` from one process stops `autobox task run` in another (worktree kind:
// the harness's process group gets SIGTERM).
func TestCLIStopStopsRun(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := strconv.Itoa(200000+os.Getpid()) + ".5"
	common := []string{"--project", root, "--tasks-dir", tasks, "--id", "s"}
	wt, _ := newWT(t, root, tasks).Path("s")
	argv := append(append([]string{exe, "task", "run"}, common...), "--", "/bin/sh", "-c", "touch started; sleep "+marker+"; echo survived")
	exited, out := spawnUntil(t, argv, nil, filepath.Join(wt, "started"))
	if code, _, errText := mainT(t, append([]string{"stop"}, common...)...); code != 0 {
		t.Fatalf("stop: %d %s", code, errText)
	}
	var ee *exec.ExitError
	if err := <-exited; !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Fatalf("run ended with %v, want exit status %d\n%s", err, 128+int(syscall.SIGTERM), out)
	}
	if n := countProcs(t, marker); n != 0 || strings.Contains(out.String(), "survived") {
		t.Fatalf("%d marker processes left\n%s", n, out)
	}
}

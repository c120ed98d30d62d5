//go:build linux

package test

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The docker task kind against the real daemon (docker_test.go makes the image): a run,
// a run as another user, and every way a harness's container is stopped — SIGTERM to
// `task run`, `task run` SIGKILLed and caught up with by `task stop`, `task cleanup` of a
// running task — each without --kind, ending with `docker ps -a` showing nothing of the
// task.

// dockerTask is a task environment of root's (the daemon's socket is root's) and the
// test image.
func dockerTask(t *testing.T, id string) (*taskEnv, string) {
	t.Helper()
	image := dockerImage(t)
	if os.Geteuid() != 0 {
		missingDocker(t, "the docker task tests run as root, whose daemon socket it is")
	}
	e := newTaskEnv(t, taskUser{name: "root"})
	e.id = id
	return e, image
}

// container is the name of the task's container: autobox-<project slug>-<id>.
func (e *taskEnv) container() string {
	e.t.Helper()
	e.locate()
	if e.worktree == "" {
		e.t.Fatalf("task %s has no worktree", e.id)
	}
	return "autobox-" + filepath.Base(filepath.Dir(e.worktree)) + "-" + e.id
}

// startRun starts `autobox task run --kind docker` of script in the background and waits
// until the harness has made the file started in its worktree. Its output goes to a file
// (a pipe would be held open by the docker client after autobox is killed).
func (e *taskEnv) startRun(image, script string, flags ...string) (*exec.Cmd, *os.File) {
	e.t.Helper()
	out, err := os.CreateTemp(e.base, "run-output-")
	if err != nil {
		e.t.Fatal(err)
	}
	args := append([]string{e.bin, "task", "run", "--project", e.repo, "--tasks-dir", e.tasks, "--id", e.id, "--kind", "docker", "--image", image}, flags...)
	if e.client != "" {
		args = append(args, "--docker", e.client)
	}
	cmd := e.cmd(e.t.Context(), e.base, append(args, "--", "sh", "-c", script)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		e.locate()
		if e.worktree != "" && fileExists(filepath.Join(e.worktree, "started")) {
			return cmd, out
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(out.Name())
			e.t.Fatalf("the harness did not start:\n%s", data)
		}
	}
}

// running reports whether docker ps shows the container running.
func running(t *testing.T, name string) bool {
	return runningOf(t, exec.Command("docker"), name)
}

// runningOf is running for a client given as a command (see noContainerOf).
func runningOf(t *testing.T, client *exec.Cmd, name string) bool {
	ps := *client
	ps.Args = append(append([]string(nil), client.Args...), "ps", "--filter", "name=^/?"+name+"$", "--format", "{{.Names}}")
	out, err := ps.Output()
	if err != nil {
		t.Fatalf("%s ps: %v", client.Path, err)
	}
	return strings.TrimSpace(string(out)) == name
}

// waitExit waits for cmd to exit and returns its status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(2 * time.Minute):
		t.Fatal("task run did not exit")
		return -1
	}
}

// A harness that ignores SIGTERM (a shell as the container's init): only SIGKILL ends it.
const stubbornHarness = `trap "" TERM; touch started; while :; do sleep 1; done`

func TestTaskDockerRun(t *testing.T) {
	e, image := dockerTask(t, "run1")
	code, out := e.autobox("run", "--kind", "docker", "--image", image, "--", "sh", "-c", "echo hi > out.txt; id -u")
	if code != 0 || !strings.Contains(out, "0\n") {
		t.Fatalf("task run: exit %d\n%s", code, out)
	}
	name := e.container()
	if data, _ := os.ReadFile(filepath.Join(e.worktree, "out.txt")); string(data) != "hi\n" {
		t.Errorf("out.txt = %q", data)
	}
	noContainer(t, name)

	// As another user, the harness is given the worktree; host git still works in it.
	code, out = e.autobox("run", "--kind", "docker", "--image", image, "--user", "1000:1000", "--", "sh", "-c", "id -u; echo mine > mine.txt && echo changed > README && mkdir sub && echo x > sub/f")
	if code != 0 || !strings.Contains(out, "1000\n") {
		t.Fatalf("task run --user 1000:1000: exit %d\n%s", code, out)
	}
	if data, _ := os.ReadFile(filepath.Join(e.worktree, "mine.txt")); string(data) != "mine\n" {
		t.Errorf("mine.txt = %q", data)
	}
	if status := e.mustGit(e.worktree, "status", "--porcelain"); !strings.Contains(status, "README") || !strings.Contains(status, "mine.txt") {
		t.Errorf("host git status in the worktree: %q", status)
	}
	noContainer(t, name)

	// A host server on every address is reached at the endpoint; one on loopback alone
	// is not, and endpoint says so.
	all, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	go http.Serve(all, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("pong")) }))
	port := strconv.Itoa(all.Addr().(*net.TCPAddr).Port)
	code, out = e.autobox("endpoint", "--port", port)
	url := "http://host.docker.internal:" + port
	if code != 0 || strings.TrimSpace(out) != url {
		t.Fatalf("task endpoint (no --kind): exit %d: %q, want %s", code, out, url)
	}
	code, out = e.autobox("run", "--kind", "docker", "--image", image, "--", "wget", "-qO-", url)
	if code != 0 || !strings.Contains(out, "pong") {
		t.Errorf("the harness fetching %s: exit %d\n%s", url, code, out)
	}
	lo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Close()
	code, out = e.autobox("endpoint", "--port", strconv.Itoa(lo.Addr().(*net.TCPAddr).Port))
	if code != 0 || !strings.Contains(out, "listens on loopback alone") || !strings.Contains(out, "--network=host") {
		t.Errorf("task endpoint of a loopback-only server: exit %d\n%s", code, out)
	}
	noContainer(t, name)
}

func TestTaskDockerSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			e, image := dockerTask(t, "term1")
			cmd, out := e.startRun(image, stubbornHarness, "--stop-grace", "1s")
			name := e.container()
			if !running(t, name) {
				t.Fatalf("%s is not running", name)
			}
			cmd.Process.Signal(sig)
			code := waitExit(t, cmd)
			data, _ := os.ReadFile(out.Name())
			t.Logf("task run exited %d:\n%s", code, data)
			noContainer(t, name)
		})
	}
}

func TestTaskDockerKilledThenStop(t *testing.T) {
	e, image := dockerTask(t, "kill1")
	cmd, _ := e.startRun(image, stubbornHarness)
	name := e.container()
	cmd.Process.Kill()
	waitExit(t, cmd)
	// Nothing can stop the container at the moment autobox is killed: it runs on until
	// a later command catches up with it.
	if !running(t, name) {
		t.Fatalf("%s is gone before task stop: the test does not show the catch-up", name)
	}
	code, out := e.run(e.base, e.bin, "task", "list", "--project", e.repo, "--tasks-dir", e.tasks, "--json")
	if code != 0 || !strings.Contains(out, `"kind":"docker"`) {
		t.Errorf("task list: exit %d\n%s", code, out)
	}
	if code, out = e.autobox("stop", "--stop-grace", "1s"); code != 0 {
		t.Fatalf("task stop (no --kind): exit %d\n%s", code, out)
	}
	noContainer(t, name)
	if code, out = e.autobox("cleanup", "--force"); code != 0 {
		t.Fatalf("task cleanup: exit %d\n%s", code, out)
	}
}

func TestTaskDockerCleanupRunning(t *testing.T) {
	e, image := dockerTask(t, "clean1")
	cmd, _ := e.startRun(image, stubbornHarness, "--stop-grace", "1s")
	name := e.container()
	// The harness's file makes the worktree dirty: unforced, cleanup keeps everything,
	// the running container included.
	code, out := e.autobox("cleanup")
	if code != 3 || !running(t, name) {
		t.Fatalf("unforced cleanup of a dirty running task: exit %d, running %v\n%s", code, running(t, name), out)
	}
	code, out = e.autobox("cleanup", "--force", "--stop-grace", "1s")
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("task cleanup --force (no --kind): exit %d\n%s", code, out)
	}
	waitExit(t, cmd)
	noContainer(t, name)
	if fileExists(e.worktree) {
		t.Errorf("the worktree %s is still there", e.worktree)
	}
}

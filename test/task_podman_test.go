//go:build linux

package test

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestTaskPodmanRootless: the docker task kind with --docker podman, rootless, as the
// ordinary user the second pass of make test runs as (test/asuser.sh): a run that writes
// its worktree, the endpoint (Podman names the host host.containers.internal itself),
// SIGTERM to task run, and task run SIGKILLed then caught up with by task stop without
// --kind, each ending with `podman ps -a` showing nothing of the task. The image is made
// as in docker_test.go and imported into the user's own storage (a home of the test's,
// reset at the end).
func TestTaskPodmanRootless(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("rootless Podman: this test runs in the ordinary user's pass (test/asuser.sh)")
	}
	if _, err := exec.LookPath("podman"); err != nil {
		missingPodman(t, "podman is not installed (Debian: apt-get install podman uidmap slirp4netns)")
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil || !isStatic(busybox) || !isStatic(bin) {
		missingPodman(t, "no static busybox (busybox-static) or autobox for the test image")
	}
	if f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0); err != nil {
		missingPodman(t, "rootless Podman's network (slirp4netns) needs /dev/net/tun, which this user cannot open ("+err.Error()+"); distributions make it 0666 (udev)")
	} else {
		f.Close()
	}
	e := newTaskEnv(t, taskUser{name: "user"})
	e.client = "podman"
	podman := func(args ...string) (int, string) { return e.run(e.base, append([]string{"podman"}, args...)...) }
	t.Cleanup(func() { podman("system", "reset", "--force") }) // before the home is removed
	var tarball bytes.Buffer
	if err := imageTar(&tarball, busybox); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(e.base, "image.tar")
	if err := os.WriteFile(tarFile, tarball.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "autobox-test-podman:" + strconv.Itoa(os.Getpid())
	if code, out := podman("import", "--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", tarFile, image); code != 0 {
		missingPodman(t, "rootless podman cannot import an image here: "+out)
	}
	client := e.cmd(t.Context(), e.base, "podman")
	client.Args = client.Args[:1]

	// A run; the endpoint of a host server on every address.
	all, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	go http.Serve(all, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("pong")) }))
	port := strconv.Itoa(all.Addr().(*net.TCPAddr).Port)
	e.id = "prun"
	code, out := e.autobox("run", "--kind", "docker", "--docker", "podman", "--image", image, "--", "sh", "-c", "echo hi > out.txt")
	if code != 0 {
		t.Fatalf("task run --docker podman: exit %d\n%s", code, out)
	}
	name := e.container()
	if data, _ := os.ReadFile(filepath.Join(e.worktree, "out.txt")); string(data) != "hi\n" {
		t.Errorf("out.txt = %q", data)
	}
	code, url := e.autobox("endpoint", "--port", port)
	url = strings.TrimSpace(url)
	if code != 0 || url != "http://host.containers.internal:"+port {
		t.Fatalf("task endpoint (no --kind) of a podman task: exit %d: %q", code, url)
	}
	// Into a file of the worktree, not to stdout: rootless Podman 4.3's
	// attach lost a container's whole output now and then on a loaded
	// machine (podman run -i --rm ... echo pong printed nothing once in 40,
	// without autobox).
	code, out = e.autobox("run", "--kind", "docker", "--docker", "podman", "--image", image, "--", "wget", "-qO", "fetched.txt", url)
	if data, _ := os.ReadFile(filepath.Join(e.worktree, "fetched.txt")); code != 0 || string(data) != "pong" {
		t.Errorf("the harness fetching %s: exit %d, fetched %q\n%s", url, code, data, out)
	}
	noContainerOf(t, client, name)

	// SIGTERM to task run.
	e.id = "pterm"
	cmd, _ := e.startRun(image, stubbornHarness, "--stop-grace", "1s")
	name = e.container()
	if !runningOf(t, client, name) {
		t.Fatalf("%s is not running", name)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd)
	noContainerOf(t, client, name)

	// task run SIGKILLed, then task stop without --kind or --docker.
	e.id = "pkill"
	cmd, _ = e.startRun(image, stubbornHarness)
	name = e.container()
	cmd.Process.Kill()
	waitExit(t, cmd)
	if !runningOf(t, client, name) {
		t.Fatalf("%s is gone before task stop: the test does not show the catch-up", name)
	}
	if code, out := e.autobox("stop", "--stop-grace", "1s"); code != 0 {
		t.Fatalf("task stop: exit %d\n%s", code, out)
	}
	noContainerOf(t, client, name)
}

// missingPodman skips, or fails under CI in the ordinary user's pass, where .ci/run
// installs podman.
func missingPodman(t *testing.T, why string) {
	t.Helper()
	if ci := os.Getenv("CI"); ci != "" && ci != "0" && ci != "false" {
		t.Fatalf("%s; CI=%s, where .ci/run installs podman, uidmap and slirp4netns", why, ci)
	}
	t.Skip(why)
}

package test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests against a real Docker daemon (Debian's docker.io, which .ci/run installs and
// starts). They need no registry: the image is made here from files of this host, a
// static busybox (Debian's busybox-static) for the tools and the static autobox under
// test, imported with `docker import`. Where docker, its daemon or busybox is missing
// they skip saying why; under CI (CI=1), run as root, they fail instead, so the suite
// cannot pass there without running them. As an ordinary user they skip even under CI:
// the daemon's socket is root's.

var (
	imageOnce sync.Once
	imageName string
	imageErr  string // why there is no image: skip (or fail under CI) with it
)

// dockerImage returns the test image, made once per test binary (it is removed by
// removeDockerImage when the tests end).
func dockerImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() { imageName, imageErr = buildDockerImage() })
	if imageErr != "" {
		missingDocker(t, imageErr)
	}
	return imageName
}

// missingDocker skips, or fails under CI as root, where .ci/run provides docker.
func missingDocker(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("%s (this pass runs as uid %d; the daemon's socket is root's)", why, os.Geteuid())
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "0" && ci != "false" {
		t.Fatalf("%s; CI=%s, where .ci/run installs docker.io and busybox-static and starts dockerd", why, ci)
	}
	t.Skip(why)
}

func buildDockerImage() (name, why string) {
	if _, err := exec.LookPath("docker"); err != nil {
		return "", "docker is not installed (Debian: apt-get install docker.io)"
	}
	if out, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("the Docker daemon does not answer (%v: %s)", err, bytes.TrimSpace(out))
	}
	busybox, err := exec.LookPath("busybox")
	if err != nil || !isStatic(busybox) {
		return "", "no static busybox for the test image (Debian: apt-get install busybox-static)"
	}
	if !isStatic(bin) {
		return "", "the autobox under test is not linked statically (make build links it so; the test image has no libraries)"
	}
	var buf bytes.Buffer
	if err := imageTar(&buf, busybox); err != nil {
		return "", "making the test image: " + err.Error()
	}
	name = "autobox-test:" + strconv.Itoa(os.Getpid())
	cmd := exec.Command("docker", "import", "-c", "ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "-", name)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("docker import: %v: %s", err, out)
	}
	return name, ""
}

// removeDockerImage removes the image made for this run, if one was.
func removeDockerImage() {
	if imageName != "" {
		exec.Command("docker", "rmi", "-f", imageName).Run()
	}
}

func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// imageTar writes the test image's root: busybox and its applets in /bin, autobox in
// /usr/local/bin, a passwd with root, a user u (1000) and nobody, /tmp, /root (0700).
func imageTar(w io.Writer, busybox string) error {
	tw := tar.NewWriter(w)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: time.Unix(0, 0)})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []struct {
		name string
		mode int64
		uid  int
	}{{"bin", 0o755, 0}, {"usr", 0o755, 0}, {"usr/bin", 0o755, 0}, {"usr/local", 0o755, 0}, {"usr/local/bin", 0o755, 0},
		{"etc", 0o755, 0}, {"tmp", 0o1777, 0}, {"var", 0o755, 0}, {"var/tmp", 0o1777, 0}, {"root", 0o700, 0},
		{"home", 0o755, 0}, {"home/u", 0o755, 1000}, {"proc", 0o555, 0}, {"sys", 0o555, 0}, {"dev", 0o755, 0}} {
		if err := dir(d.name, d.mode, d.uid); err != nil {
			return err
		}
	}
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	if err := file("bin/busybox", 0o755, bb); err != nil {
		return err
	}
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "/bin/busybox", Mode: 0o777, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	ab, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if err := file("usr/local/bin/autobox", 0o755, ab); err != nil {
		return err
	}
	if err := file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")); err != nil {
		return err
	}
	if err := file("etc/group", 0o644, []byte("root:x:0:\nu:x:1000:\nnogroup:x:65534:\n")); err != nil {
		return err
	}
	return tw.Close()
}

// containerName is a name of this test run's own for a container.
func containerName(t *testing.T, what string) string {
	return fmt.Sprintf("autobox-test-%d-%s", os.Getpid(), what)
}

// dockerRun runs `docker run --rm --name NAME FLAGS IMAGE sh -c SCRIPT` and returns its
// output and exit status; afterwards no container of that name may be left.
func dockerRun(t *testing.T, name string, flags []string, script string) (string, int) {
	t.Helper()
	args := append([]string{"run", "--rm", "--name", name}, flags...)
	args = append(args, dockerImage(t), "sh", "-c", script)
	cmd := exec.Command("docker", args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("docker run: %v", err)
		}
		code = ee.ExitCode()
	}
	noContainer(t, name)
	return string(out), code
}

// noContainer checks that `docker ps -a` shows no container named name.
func noContainer(t *testing.T, name string) {
	t.Helper()
	noContainerOf(t, exec.Command("docker"), name)
}

// noContainerOf checks that `client ps -a` shows no container named name; client is a
// command whose arguments are added to (podman run as a user, say).
func noContainerOf(t *testing.T, client *exec.Cmd, name string) {
	t.Helper()
	var out []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		ps := *client
		ps.Args = append(append([]string(nil), client.Args...), "ps", "-a", "--filter", "name=^/?"+name+"$", "--format", "{{.Names}} {{.Status}}")
		out, err = ps.Output()
		if err != nil {
			t.Fatalf("%s ps -a: %v", client.Path, err)
		}
		// --rm removes the container after the client has its exit status: give the
		// daemon a moment to finish, never a reason to pass.
		if len(bytes.TrimSpace(out)) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("%s ps -a still shows %s", client.Path, s)
		rm := *client
		rm.Args = append(append([]string(nil), client.Args...), "rm", "-f", name)
		rm.Run()
	}
}

// want checks that out holds every one of subs.
func want(t *testing.T, what, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("%s: no %q in:\n%s", what, s, out)
		}
	}
}

// writeTemp writes data to a file of the test's and returns its path.
func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// searchableAbove lets every user search the directories from dir up to the temporary
// directory, and dir itself (t.TempDir's are 0700): a root server without namespaces runs
// commands as uid 65534, and refuses a mount that uid cannot reach.
func searchableAbove(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != filepath.Dir(d) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
			t.Fatal(err)
		}
	}
}

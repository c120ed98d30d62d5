package seatbelt

// Real enforcement, on a Mac: every denial next to the same action allowed.
// (Written and compiled on Linux, where it cannot run; see the report.)

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/testnet"
	"github.com/autobox-dev/autobox/policy"
)

func requireSeatbelt(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("seatbelt cannot run here: %v", err)
	}
}

// fixture is a canonical temp tree:
//
//	ro/a.txt            ReadOnly
//	rw/                 ReadWrite, with rw/sub/vendor ReadOnly and rw/other
//	secret/b.txt        not in the policy
//	scratch/            ReadWrite (HOME, TMPDIR)
type fixture struct {
	root string
	p    policy.Sandbox
	env  []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir()) // /var/folders -> /private/var/folders
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ro", "rw/sub/vendor", "rw/other", "secret", "scratch"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho ran\n"
	for name, data := range map[string]string{
		"ro/a.txt": "a", "secret/b.txt": "b", "secret/run.sh": script, "rw/run.sh": script,
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	j := func(s string) string { return filepath.Join(root, s) }
	return &fixture{
		root: root,
		p: policy.Sandbox{
			ReadOnly:  []string{j("ro"), j("rw/sub/vendor")},
			ReadWrite: []string{j("rw"), j("scratch")},
			AllowExec: true,
		},
		env: []string{"PATH=/usr/bin:/bin", "HOME=" + j("scratch"), "TMPDIR=" + j("scratch")},
	}
}

// sh runs script with /bin/bash under f's policy and returns its result.
func (f *fixture) sh(t *testing.T, p policy.Sandbox, script string) (Result, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, err := Start(&Spec{Argv: []string{"/bin/bash", "-c", script}, Env: f.env, Dir: f.root + "/scratch", Sandbox: p}, w, w)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	res, err := tree.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return res, string(out)
}

func TestSeatbeltFiles(t *testing.T) {
	requireSeatbelt(t)
	f := newFixture(t)
	r := f.root
	for _, c := range []struct {
		name, script string
		allowed      bool
	}{
		{"read ro mount", "cat " + r + "/ro/a.txt", true},
		{"read outside mounts", "cat " + r + "/secret/b.txt", false},
		{"read TLS store", "cat /private/etc/ssl/cert.pem >/dev/null", true},
		{"read /etc/passwd", "cat /private/etc/passwd", false},
		{"write rw mount", "echo x > " + r + "/rw/new", true},
		{"write ro mount", "echo x > " + r + "/ro/new", false},
		{"write ro inside rw", "echo x > " + r + "/rw/sub/vendor/new", false},
		{"rename dir in rw", "mv " + r + "/rw/other " + r + "/rw/other2", true},
		{"rename dir above ro", "mv " + r + "/rw/sub " + r + "/rw/sub2", false},
		{"write outside mounts", "echo x > " + r + "/secret/new", false},
		{"exec from rw mount", r + "/rw/run.sh", true},
		{"exec outside mounts", r + "/secret/run.sh", false},
		{"write scratch via TMPDIR", `echo x > "$TMPDIR/t"`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, out := f.sh(t, f.p, c.script)
			if ok := res.Started && res.ExitCode == 0; ok != c.allowed {
				t.Errorf("allowed = %v, want %v (%+v, %q)", ok, c.allowed, res, out)
			}
		})
	}
}

func TestSeatbeltNetwork(t *testing.T) {
	requireSeatbelt(t)
	f := newFixture(t)
	ln := testnet.TCP(t)
	script := "exec 3<>/dev/tcp/" + strings.Replace(ln.Addr().String(), ":", "/", 1)
	for _, allow := range []bool{false, true} {
		p := f.p
		p.AllowNetwork = allow
		res, out := f.sh(t, p, script)
		if ok := res.Started && res.ExitCode == 0; ok != allow {
			t.Errorf("AllowNetwork %v: connect allowed = %v (%q)", allow, ok, out)
		}
	}
}

func TestSeatbeltKill(t *testing.T) {
	requireSeatbelt(t)
	f := newFixture(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tree, err := Start(&Spec{Argv: []string{"/bin/sh", "-c", "trap '' TERM; sleep 1000 & sleep 1000 & echo ready; wait"},
		Env: f.env, Sandbox: f.p}, w, w)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(r).ReadString('\n'); line != "ready\n" {
		t.Fatalf("got %q", line)
	}
	if err := unix.Kill(-tree.Pid(), 0); err != nil {
		t.Fatalf("group not running before Kill: %v", err)
	}
	tree.Kill()
	if res, err := tree.Wait(); err != nil || res.Signal != "SIGKILL" {
		t.Errorf("Wait: %+v, %v", res, err)
	}
	for unix.Kill(-tree.Pid(), 0) == nil { // SIGKILL lands asynchronously
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWorkerProfileEnforced(t *testing.T) {
	requireSeatbelt(t)
	f := newFixture(t)
	const exe = "/bin/bash" // a real binary, unlike /bin/sh's trampoline
	profile, params := WorkerProfile(exe)
	for _, c := range []struct {
		script  string
		allowed bool
	}{
		{"echo hi", true},
		{"/bin/echo hi", false}, // no other program
		{": < /dev/urandom", true},
		{": < " + f.root + "/ro/a.txt", false},
		{"echo x > " + f.root + "/scratch/f", false},
		{"echo x > /dev/null", true},
	} {
		cmd := exec.Command(SandboxExec, Args(profile, params, []string{exe, "-c", c.script})[1:]...)
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		if ok := err == nil; ok != c.allowed {
			t.Errorf("%q: allowed = %v, want %v (%q)", c.script, ok, c.allowed, out)
		}
	}
}

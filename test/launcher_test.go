package test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/launcherbin"
)

// The small launcher (internal/launcherbin): a binary `make build` made
// carries it after its ELF image and starts every launcher from it, through a
// sealed memfd; a binary without it (go build alone, a cut copy), or a host
// where memfds may not be run, starts them from itself and says so in its log.
// The tests find the launchers below the server and read /proc/PID/exe.

// smallLauncherExe is what /proc/PID/exe shows of a launcher started from the
// small launcher's memfd.
const smallLauncherExe = "/memfd:autobox-launcher (deleted)"

// payloadSize is the size of the small launcher appended to the binary at
// path, with its trailer; 0 if it carries none.
func payloadSize(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := len(launcherbin.TrailerMagic) + 16
	if len(b) < n || !bytes.HasPrefix(b[len(b)-n:], []byte(launcherbin.TrailerMagic)) {
		return 0
	}
	size, err := strconv.ParseInt(string(b[len(b)-16:]), 10, 64)
	if err != nil {
		t.Fatalf("%s: damaged trailer %q", path, b[len(b)-n:])
	}
	return size + int64(n)
}

// launcherExes waits for launchers (`worker exec`) below pid and returns what
// each runs (/proc/PID/exe).
func launcherExes(t *testing.T, pid int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var exes []string
		for _, p := range descendants(pid) {
			argv := strings.Split(readProc(p, "cmdline"), "\x00")
			if len(argv) < 3 || argv[1] != "worker" || argv[2] != "exec" {
				continue
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); err == nil {
				exes = append(exes, exe)
			}
		}
		if len(exes) > 0 {
			return exes
		}
		if time.Now().After(deadline) {
			t.Fatalf("no launcher below the server %d after 30 s", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readProc(pid int, name string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	return string(b)
}

// launchersFrom runs echo through the server s and checks that its launchers
// run want (smallLauncherExe or a binary's path) and that its log says why.
func launchersFrom(t *testing.T, s *session, want, logged string) {
	t.Helper()
	o, _ := s.exec(map[string]any{"command": []string{"echo", "hi"}})
	if o.code() != 0 || o.Stdout != "hi\n" {
		t.Fatalf("echo hi: exit %d, stdout %q, stderr %q", o.code(), o.Stdout, o.Stderr)
	}
	for _, exe := range launcherExes(t, s.cmd.Process.Pid) {
		if exe != want {
			t.Errorf("a launcher runs %s, want %s", exe, want)
		}
	}
	if !strings.Contains(s.stderr.String(), logged) {
		t.Errorf("the server's log does not say %q:\n%s", logged, s.stderr.String())
	}
}

// TestLauncherIsTheSmallOne: the launchers of this run's binary start from
// the small launcher if it carries one (make build), else from the binary
// itself (go build alone), and the log says which.
func TestLauncherIsTheSmallOne(t *testing.T) {
	requireSandbox(t)
	s := startEnv(t, nil)
	if payloadSize(t, bin) == 0 {
		t.Log("this binary carries no small launcher (go build alone): its launchers must start from it")
		launchersFrom(t, s, bin, "built without the small launcher")
		return
	}
	launchersFrom(t, s, smallLauncherExe, "launchers start from the small launcher")
	// The launcher keeps the main binary's name and argv[0]: ps, and the
	// session daemon's check of its peers, see what they saw before.
	for _, p := range descendants(s.cmd.Process.Pid) {
		if argv := strings.Split(readProc(p, "cmdline"), "\x00"); len(argv) > 2 && argv[1] == "worker" && argv[2] == "exec" {
			if name := launcherName(p); argv[0] != bin || (name != "" && name != filepath.Base(bin)) {
				t.Errorf("launcher %d: argv[0] %q, name %q; want %s and its base name", p, argv[0], name, bin)
			}
		}
	}
}

// launcherName is launcher p's name once it has named itself: the kernel names
// a process exec'd from /proc/self/fd/N "N" until its first steps rename it,
// and a pool's launcher just started (a loaded machine is slow to run it) may
// not have taken them yet. "" if p is gone.
func launcherName(p int) string {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		name := strings.TrimSpace(readProc(p, "comm"))
		if _, err := strconv.Atoi(name); err != nil || time.Now().After(deadline) {
			return name
		}
	}
}

// cutBinary copies this run's binary without its small launcher (as strip or
// a copy of the ELF image alone would), or skips if it carries none.
func cutBinary(t *testing.T) string {
	t.Helper()
	n := payloadSize(t, bin)
	if n == 0 {
		t.Skip("this binary carries no small launcher: TestLauncherIsTheSmallOne checks its fallback")
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	cut := filepath.Join(dir, "autobox")
	if err := os.WriteFile(cut, b[:int64(len(b))-n], 0o755); err != nil {
		t.Fatal(err)
	}
	return cut
}

// TestLauncherFallbackWithoutPayload: a binary linked for a small launcher that
// lost it starts its launchers from itself, says why, and works.
func TestLauncherFallbackWithoutPayload(t *testing.T) {
	requireSandbox(t)
	cut := cutBinary(t)
	s := startArgv(t, nil, []string{cut})
	launchersFrom(t, s, cut, "no small launcher after this binary")
}

// TestLauncherFallbackWrongPayload: a small launcher that is not the one the
// binary was built with (here: the payload's first bytes changed, as another
// build's would differ) is refused, and launchers start from the binary.
func TestLauncherFallbackWrongPayload(t *testing.T) {
	requireSandbox(t)
	n := payloadSize(t, bin)
	cut := cutBinary(t)
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	payload := b[int64(len(b))-n:]
	other := bytes.Clone(payload)
	// The build ID is in the first 4 KB (a note after the ELF headers).
	for i := 64; i < 4096 && i < len(other); i++ {
		if other[i] >= 'a' && other[i] <= 'z' {
			other[i] ^= 0x20
		}
	}
	f, err := os.OpenFile(cut, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(other)
	f.Close()
	s := startArgv(t, nil, []string{cut})
	launchersFrom(t, s, cut, "is not the one it was built with")
}

// TestLauncherFallbackMemfdNoexec: where memfds may not be run
// (vm.memfd_noexec=2, which a pid namespace may set for itself and below),
// launchers start from the main binary, and the log says why.
func TestLauncherFallbackMemfdNoexec(t *testing.T) {
	requireSandbox(t)
	if payloadSize(t, bin) == 0 {
		t.Skip("this binary carries no small launcher: TestLauncherIsTheSmallOne checks its fallback")
	}
	if os.Geteuid() != 0 {
		t.Skip("setting vm.memfd_noexec, even for a pid namespace of one's own, needs root")
	}
	if _, err := os.Stat("/proc/sys/vm/memfd_noexec"); err != nil {
		t.Skip("no vm.memfd_noexec here (Linux < 6.3)")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	s := startArgv(t, nil, []string{unshare, "--pid", "--fork", "/bin/sh", "-c", `echo 2 > /proc/sys/vm/memfd_noexec && exec "$0" "$@"`, bin})
	launchersFrom(t, s, bin, "memfd_create")
}

package seatbelt

// The runner's process handling (session, group kill, descriptors, stdin,
// environment, results) is the same code on macOS and Linux, so it is tested
// here for real. Only sandbox-exec is stood in for: the test binary, started
// under the name sandbox-exec, parses the argv exactly as sandbox-exec's
// getopt does, checks every (param) in the profile is defined, and execs the
// command, as sandbox-exec does after applying the profile. The profile itself
// is not enforced here; darwin_test.go enforces it on a Mac.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "sandbox-exec" {
		fakeSandboxExec()
	}
	if len(os.Args) > 2 && os.Args[1] == "worker" && os.Args[2] == LimitsRole {
		LimitsMain(os.Args[3:])
	}
	os.Exit(m.Run())
}

func fakeSandboxExec() {
	profile, params, argv, err := parseSandboxExecArgs(os.Args[1:])
	if err == nil && len(argv) == 0 {
		err = errors.New("no command")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-exec: %v\n", err)
		os.Exit(64)
	}
	defined := map[string]bool{}
	for _, p := range params {
		name, _, _ := strings.Cut(p, "=")
		defined[name] = true
	}
	forms, err := parseSBPL(profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox-exec: %v\n", err)
		os.Exit(65)
	}
	for _, name := range paramRefs(forms) {
		if !defined[name] {
			fmt.Fprintf(os.Stderr, "sandbox-exec: undefined param %s\n", name)
			os.Exit(65)
		}
	}
	// Marks the command as started through sandbox-exec (see TestUnsafe).
	env := append(os.Environ(), "FAKE_SANDBOX_EXEC=1")
	err = syscall.Exec(argv[0], argv, env)
	fmt.Fprintf(os.Stderr, "sandbox-exec: execvp() of '%s' failed: %v\n", argv[0], err)
	os.Exit(71)
}

var testEnv = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}

// run starts spec through the stand-in, waits, and returns the result and output.
func run(t *testing.T, spec *Spec) (Result, string, string) {
	t.Helper()
	tree, stdout, stderr := start(t, spec)
	res, err := tree.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return res, read(t, stdout), read(t, stderr)
}

func start(t *testing.T, spec *Spec) (*Tree, *os.File, *os.File) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stdout, err1 := os.Create(filepath.Join(dir, "stdout"))
	stderr, err2 := os.Create(filepath.Join(dir, "stderr"))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close(); stderr.Close() })
	tree, err := launch(self, spec, stdout, stderr)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	t.Cleanup(func() { tree.Kill(); _, _ = tree.Wait() })
	return tree, stdout, stderr
}

func read(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sandboxed(argv ...string) *Spec {
	return &Spec{Argv: argv, Env: testEnv, Sandbox: policy.Sandbox{ReadWrite: []string{"/tmp"}, AllowExec: true}}
}

func TestExitCodeAndOutput(t *testing.T) {
	res, out, errOut := run(t, sandboxed("sh", "-c", "echo hi; echo oops >&2; exit 3"))
	if !reflect.DeepEqual(exit(res), Result{Started: true, ExitCode: 3}) || out != "hi\n" || errOut != "oops\n" {
		t.Errorf("got %+v, stdout %q, stderr %q", res, out, errOut)
	}
	// What the kernel accounted of the command and what it reaped.
	if res.Usage.CPU <= 0 || res.Usage.MaxRSS < 1<<20 {
		t.Errorf("usage %+v", res.Usage)
	}
}

// exit is how a command ended, without its usage.
func exit(res Result) Result {
	res.Usage = policy.Usage{}
	return res
}

func TestSignalResult(t *testing.T) {
	res, _, _ := run(t, sandboxed("sh", "-c", "kill -TERM $$"))
	if !reflect.DeepEqual(exit(res), Result{Started: true, ExitCode: -1, Signal: "SIGTERM"}) {
		t.Errorf("got %+v", res)
	}
}

func TestSpawnError(t *testing.T) {
	tree, _, _ := start(t, sandboxed("autobox-no-such-command"))
	res, err := tree.Wait()
	if err != nil || res.Started || res.ExitCode != -1 || !strings.Contains(res.SpawnError, "not found") || tree.Pid() != 0 {
		t.Errorf("got %+v, %v, pid %d", res, err, tree.Pid())
	}
	tree.Kill() // harmless on a tree that never started
	noDir := sandboxed("true")
	noDir.Dir = "/nonexistent-dir"
	if res, _, _ := run(t, noDir); res.Started || res.SpawnError == "" {
		t.Errorf("missing Dir: %+v", res)
	}
	// Positive control: an existing command, found through the command's PATH.
	if res, _, _ := run(t, sandboxed("true")); !res.Started || res.ExitCode != 0 {
		t.Errorf("true: %+v", res)
	}
}

func TestInvalidSpec(t *testing.T) {
	noExec := sandboxed("true")
	noExec.Sandbox.AllowExec = false
	relative := sandboxed("true")
	relative.Sandbox.DenyWrite = []string{"src"}
	for name, spec := range map[string]*Spec{"empty argv": {}, "AllowExec false": noExec, "relative path": relative} {
		if _, err := launch("/nonexistent", spec, nil, nil); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%s: err = %v, want ErrInvalidSpec", name, err)
		}
	}
}

func TestEnvironmentIsExactlySpecEnv(t *testing.T) {
	t.Setenv("AUTOBOX_TEST_SECRET", "leaked")
	res, out, _ := run(t, sandboxed("env"))
	got := strings.Fields(out)
	slices.Sort(got)
	want := append(slices.Clone(testEnv), "FAKE_SANDBOX_EXEC=1")
	slices.Sort(want)
	if !res.Started || !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
	// nil Env means empty, not ours.
	spec := sandboxed("/usr/bin/env")
	spec.Env = nil
	if _, out, _ := run(t, spec); strings.TrimSpace(out) != "FAKE_SANDBOX_EXEC=1" {
		t.Errorf("nil Env: env = %q", out)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	spec := sandboxed("pwd")
	spec.Dir = dir
	if _, out, _ := run(t, spec); strings.TrimSpace(out) != dir {
		t.Errorf("pwd = %q, want %q", out, dir)
	}
}

func TestUnsafeSkipsSandboxExec(t *testing.T) {
	spec := sandboxed("env")
	spec.Unsafe = true
	spec.Sandbox.AllowExec = false // not needed without a profile
	if res, out, _ := run(t, spec); !res.Started || strings.Contains(out, "FAKE_SANDBOX_EXEC") {
		t.Errorf("unsafe run went through sandbox-exec: %+v %q", res, out)
	}
}

// TestOnlyStdioInherited: descriptors 0-2 only (even one we leak on purpose
// without close-on-exec), stdin /dev/null, a new session and process group.
func TestOnlyStdioInherited(t *testing.T) {
	leak, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer leak.Close()
	if _, err := unix.FcntlInt(leak.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	// No pipeline or command substitution: the shell would hold pipe ends.
	res, out, errOut := run(t, sandboxed("sh", "-c", "ls /proc/$$/fd"))
	if fds := strings.Fields(out); !res.Started || !slices.Equal(fds, []string{"0", "1", "2"}) {
		t.Errorf("open descriptors %v, want 0 1 2 (%+v, %s)", fds, res, errOut)
	}
	res, out, errOut = run(t, sandboxed("sh", "-c", "readlink /proc/$$/fd/0; echo $$; cat /proc/$$/stat"))
	lines := strings.Split(out, "\n")
	if !res.Started || res.ExitCode != 0 || len(lines) < 3 {
		t.Fatalf("%+v %q %q", res, out, errOut)
	}
	if lines[0] != "/dev/null" {
		t.Errorf("stdin is %q", lines[0])
	}
	// /proc/PID/stat: pid (comm) state ppid pgrp session ...
	stat := strings.Fields(lines[2][strings.LastIndex(lines[2], ")")+1:])
	if lines[1] != stat[2] || lines[1] != stat[3] {
		t.Errorf("pid %s, pgrp %s, session %s: want a new session", lines[1], stat[2], stat[3])
	}
	// Positive control: the probe sees a descriptor the command opens itself.
	if _, out, _ := run(t, sandboxed("sh", "-c", "exec 7</dev/null; ls /proc/$$/fd")); !slices.Contains(strings.Fields(out), "7") {
		t.Errorf("probe does not see fd 7: %q", out)
	}
}

// groupMembers returns the live (not zombie) processes in process group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // exited meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
		if f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// survivors returns the processes of group pgid that are still alive once
// SIGKILL has had time to land: kill(2) returns before its target is dead.
func survivors(t *testing.T, pgid int) []int {
	t.Helper()
	var left []int
	for range 2000 { // about 10s: a generous bound, so a failure is reported, not hung
		if left = groupMembers(t, pgid); len(left) == 0 {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return left
}

// waitForLine waits for a line on stdout; output on stderr means the
// command failed instead.
func waitForLine(t *testing.T, stdout, stderr *os.File) string {
	t.Helper()
	for {
		if s := read(t, stdout); strings.Contains(s, "\n") {
			return s
		}
		if s := read(t, stderr); s != "" {
			t.Fatalf("stderr: %s", s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKillKillsTheGroup(t *testing.T) {
	tree, stdout, stderr := start(t, sandboxed("sh", "-c", "trap '' TERM; sleep 1000 & sleep 1000 & echo ready; wait"))
	waitForLine(t, stdout, stderr)
	// Positive control: the shell and both sleeps are running in the group.
	if n := len(groupMembers(t, tree.Pid())); n < 3 {
		t.Fatalf("%d processes in the group before Kill, want 3", n)
	}
	tree.Kill()
	res, err := tree.Wait()
	if err != nil || res.Signal != "SIGKILL" {
		t.Errorf("Wait after Kill: %+v, %v", res, err)
	}
	if left := survivors(t, tree.Pid()); len(left) != 0 {
		t.Errorf("processes left after Kill: %v", left)
	}
	tree.Kill() // safe after Wait
}

func TestWaitKillsLeftovers(t *testing.T) {
	mark := filepath.Join(t.TempDir(), "go")
	tree, stdout, stderr := start(t, sandboxed("sh", "-c", `sleep 1000 & echo $!; while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", mark))
	sleeper, err := strconv.Atoi(strings.TrimSpace(waitForLine(t, stdout, stderr)))
	if err != nil {
		t.Fatal(err)
	}
	// Positive control: the background sleep runs in the command's group.
	if !slices.Contains(groupMembers(t, tree.Pid()), sleeper) {
		t.Fatalf("background sleep %d is not in group %d", sleeper, tree.Pid())
	}
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := tree.Wait()
	if err != nil || !reflect.DeepEqual(exit(res), Result{Started: true}) {
		t.Errorf("Wait: %+v, %v", res, err)
	}
	if left := survivors(t, tree.Pid()); len(left) != 0 {
		t.Errorf("processes left after the command exited: %v", left)
	}
}

func TestStartFailsClosedOffMacOS(t *testing.T) {
	if err := Available(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Available() = %v, want ErrUnavailable", err)
	}
	if _, err := Start(sandboxed("true"), nil, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start() = %v, want ErrUnavailable", err)
	}
	unsafe := sandboxed("true")
	unsafe.Unsafe = true
	if _, err := Start(unsafe, nil, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start(Unsafe) = %v, want ErrUnavailable", err)
	}
}

func TestRelativePathEntriesIgnored(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "true"), []byte("#!/bin/sh\necho planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"bin:/usr/bin:/bin", ""},                 // relative entry skipped
		{dir + "/bin:/usr/bin:/bin", "planted\n"}, // positive control
	} {
		spec := sandboxed("true")
		spec.Env = []string{"PATH=" + c.path}
		spec.Dir = dir
		if res, out, _ := run(t, spec); !res.Started || out != c.want {
			t.Errorf("PATH=%s: %+v, stdout %q, want %q", c.path, res, out, c.want)
		}
	}
}

// TestLimits: a command with limits runs through `autobox worker limits` (here the
// test binary), which sets its rlimits, soft and hard, and ignores SIGXFSZ, so a
// write past the file size limit fails with EFBIG; then sandbox-exec, with the
// same argv as without limits. (Unsafe here: the stand-in sandbox-exec is a Go
// program, whose runtime handles SIGXFSZ again, so its command would not
// inherit the ignored signal; /usr/bin/sandbox-exec keeps it.)
func TestLimits(t *testing.T) {
	limitsExe = os.Executable
	spec := sandboxed("/bin/sh", "-c", `ulimit -Sn; ulimit -Hn; ulimit -St; ulimit -Ht; dd if=/dev/zero of=/tmp/autobox-limits-$$ bs=1000 count=3 2>&1; echo dd=$?; rm -f /tmp/autobox-limits-$$`)
	spec.Unsafe = true
	spec.Limits = &policy.Limits{WriteBytes: 2000, OpenFiles: 64, CPU: 1500 * time.Millisecond}
	res, stdout, stderr := run(t, spec)
	lines := strings.Split(stdout, "\n")
	if res.ExitCode != 0 || len(lines) < 4 || strings.Join(lines[:4], ",") != "64,64,2,3" || !strings.Contains(stdout, "File too large") || !strings.Contains(stdout, "dd=1") {
		t.Errorf("limits: %+v stdout %q stderr %q", res, stdout, stderr)
	}
	// Without a per-process limit, no wrapper.
	if got := limitsArgv("/x/autobox", &policy.Limits{WriteBytes: -1, Processes: 5}, "/bin/true", []string{"true"}); got != nil {
		t.Errorf("argv without rlimits: %q", got)
	}
	want := []string{"/x/autobox", "worker", "limits", "--fsize", "0", "--cpu", "1", "--", "/usr/bin/sandbox-exec", "sandbox-exec", "-p", "x"}
	if got := limitsArgv("/x/autobox", &policy.Limits{CPU: time.Millisecond}, "/usr/bin/sandbox-exec", []string{"sandbox-exec", "-p", "x"}); !slices.Equal(got, want) {
		t.Errorf("argv: %q, want %q", got, want)
	}
}

//go:build darwin || linux

package seatbelt

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

// Tree is a started command: the process sandbox-exec became, in its own
// session and process group, and whatever it started in that group.
type Tree struct {
	cmd      *exec.Cmd // nil when the command could not be started
	spawnErr string

	mu     sync.Mutex
	reaped bool // the leader's pid (= group id) may now be reused

	waitOnce sync.Once
	result   Result
	err      error
}

// launch starts spec through the sandbox-exec at sandboxExec (a stand-in in
// the Linux tests; Start passes SandboxExec).
func launch(sandboxExec string, spec *Spec, stdout, stderr *os.File) (*Tree, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	env := spec.Env
	if env == nil {
		env = []string{} // nil would hand the command our environment
	}
	bin, err := lookPath(spec.Argv[0], env, spec.Dir)
	if err != nil {
		return &Tree{spawnErr: err.Error()}, nil
	}
	if err := closeOnExecAll(); err != nil {
		return nil, err
	}
	argv := append([]string{bin}, spec.Argv[1:]...)
	path := bin
	if !spec.Unsafe {
		profile, params := ExecProfile(&spec.Sandbox)
		argv = Args(profile, params, argv)
		path = sandboxExec
	}
	if spec.Limits != nil {
		exe, err := limitsExe()
		if err != nil {
			return nil, fmt.Errorf("finding the autobox binary for the command's limits: %w", err)
		}
		if wrapped := limitsArgv(exe, spec.Limits, path, argv); wrapped != nil {
			argv, path = wrapped, exe
		}
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   argv,
		Env:    env,
		Dir:    spec.Dir,
		Stdin:  nil, // /dev/null
		Stdout: stdout,
		Stderr: stderr,
		// A new session: its own process group for Kill, and no controlling
		// terminal to read from. Every descriptor is close-on-exec and
		// ExtraFiles is empty, so the command inherits only 0, 1 and 2.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := cmd.Start(); err != nil {
		// fork/exec failures (a missing Dir, no processes left) are spawn
		// errors of this command; anything else is ours.
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			return &Tree{spawnErr: err.Error()}, nil
		}
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return &Tree{cmd: cmd}, nil
}

// closeOnExecAll marks every descriptor above 2 close-on-exec. Go opens its
// own that way; this also covers any that C code (cgo, V8) opened without it.
func closeOnExecAll() error {
	d, err := os.Open(fdDir)
	if err != nil {
		return fmt.Errorf("listing open descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("listing open descriptors: %w", err)
	}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// checkSpec rejects what Start will not run.
func checkSpec(spec *Spec) error {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return fmt.Errorf("%w: empty argv", ErrInvalidSpec)
	}
	if spec.Unsafe {
		return nil
	}
	if !spec.Sandbox.AllowExec {
		return fmt.Errorf("%w: AllowExec is false, but sandbox-exec starts the command with an exec the profile governs", ErrInvalidSpec)
	}
	s := &spec.Sandbox
	for _, l := range []struct {
		kind  string
		paths []string
	}{{"ReadOnly", s.ReadOnly}, {"ReadWrite", s.ReadWrite}, {"DenyWrite", s.DenyWrite}, {"Devices", s.Devices}} {
		for _, p := range l.paths {
			if !usable(p) {
				return fmt.Errorf("%w: %s path %q is not absolute and clean", ErrInvalidSpec, l.kind, p)
			}
		}
	}
	return nil
}

// lookPath finds name in the PATH of the command's environment (absolute
// entries only), so a missing command is reported as a spawn error, not as
// sandbox-exec's exit status. A name with a "/" is only checked (relative to
// dir when relative).
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", &exec.Error{Name: name, Err: err}
		}
		return name, nil
	}
	pathList := "/usr/bin:/bin" // execvp's default on macOS
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			pathList = v // the last one: exec.Cmd keeps the last of duplicates
		}
	}
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue // "" and relative entries would search wherever Dir is
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return os.ErrPermission
	}
	return nil
}

// Pid is the pid of the command (sandbox-exec execs it in place), which is
// also its session and process group id; 0 if it never started.
func (t *Tree) Pid() int {
	if t.cmd == nil {
		return 0
	}
	return t.cmd.Process.Pid
}

// Wait waits for the command to exit, then kills whatever it left running in
// its process group, and returns how it ended. It may be called more than once
// and from several goroutines; every call returns the same.
func (t *Tree) Wait() (Result, error) {
	t.waitOnce.Do(t.wait)
	return t.result, t.err
}

func (t *Tree) wait() {
	if t.cmd == nil {
		t.result = Result{SpawnError: t.spawnErr, ExitCode: -1}
		return
	}
	pid := t.cmd.Process.Pid
	// Wait for the exit without reaping: until it is reaped the leader holds
	// its pid, so the group id cannot name someone else's group when we kill
	// the processes it left behind.
	exitedErr := waitExited(pid)
	t.mu.Lock()
	defer t.mu.Unlock()
	if exitedErr == nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	waitErr := t.cmd.Wait()
	t.reaped = true
	ps := t.cmd.ProcessState
	if ps == nil {
		t.err = fmt.Errorf("waiting for pid %d: %w", pid, waitErr)
		return
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	t.result = Result{Started: true, ExitCode: ws.ExitStatus(), Usage: usageOf(ps)}
	if ws.Signaled() {
		t.result.ExitCode = -1
		t.result.Signal = unix.SignalName(ws.Signal())
	}
	if exitedErr != nil {
		t.err = fmt.Errorf("processes left in group %d were not killed: %w", pid, exitedErr)
	}
}

// Kill sends SIGKILL to the command's process group now. It is safe to call
// more than once, concurrently with Wait, and after the command has exited.
//
// Known macOS limit: a descendant that calls setsid(2) or setpgid(2) leaves
// the group and survives; macOS has no subreaper or cgroup to find it by.
// Isolation names the sandbox the command ran in.
func (t *Tree) Isolation() string { return "seatbelt" }

func (t *Tree) Kill() {
	if t.cmd == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.reaped {
		_ = unix.Kill(-t.cmd.Process.Pid, unix.SIGKILL)
	}
}

// usageOf is what the kernel accounted of the command and the children it reaped:
// CPU time, and the peak resident memory of the largest process (kilobytes on
// Linux, bytes on macOS).
func usageOf(ps *os.ProcessState) policy.Usage {
	u := policy.Usage{CPU: ps.UserTime() + ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSS = int64(ru.Maxrss)
		if runtime.GOOS == "linux" {
			u.MaxRSS <<= 10
		}
	}
	return u
}

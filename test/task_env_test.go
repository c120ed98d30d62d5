//go:build linux

package test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// taskUser is who runs autobox and host git in a task test: root (autobox can pin the
// worktree's link files) or an unprivileged user (it cannot: only its checks protect).
type taskUser struct {
	name string
	cred *syscall.Credential // nil: this process's own user
}

// taskUsers are the users this machine can test: root and nobody when the tests run as root.
func taskUsers(t *testing.T) []taskUser {
	if os.Geteuid() != 0 {
		t.Logf("not root: autobox cannot pin files, and the tests run as this user only")
		return []taskUser{{name: "user"}}
	}
	return []taskUser{{name: "root"}, {name: "unprivileged", cred: &syscall.Credential{Uid: 65534, Gid: 65534}}}
}

// taskEnv is one project, its tasks directory, a home for host git, and a directory for the
// markers the probes' commands create. Everything belongs to the env's user.
type taskEnv struct {
	t                             *testing.T
	user                          taskUser
	base, bin, home, repo, tasks  string
	markers, common, worktree, id string
	client                        string // the docker kind's client for startRun; "" is docker
}

// newTaskEnv makes a project with one commit on main, owned by u.
func newTaskEnv(t *testing.T, u taskUser) *taskEnv {
	t.Helper()
	// t.TempDir's parent is 0700; another user needs a world-traversable base.
	base, err := os.MkdirTemp("", "autobox-task-git-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		clearImmutable(base) // a failed test may leave autobox's pins behind
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &taskEnv{t: t, user: u, base: base, id: "probe",
		bin: filepath.Join(base, "bin", "autobox"), home: filepath.Join(base, "home"),
		repo: filepath.Join(base, "proj"), tasks: filepath.Join(base, "tasks"), markers: filepath.Join(base, "markers")}
	victim := filepath.Join(base, "victim") // a directory of the person's that no harness may write
	for _, d := range []string{filepath.Dir(e.bin), e.home, e.repo, e.markers, victim} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyFile(bin, e.bin); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.bin, 0o755)
	gitconfig := "[user]\n\tname = Host User\n\temail = host@example.invalid\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(e.home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if u.cred != nil {
		for _, d := range []string{e.home, e.repo, e.markers, victim, filepath.Join(e.home, ".gitconfig")} {
			if err := os.Chown(d, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(e.tasks, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(e.tasks, int(u.cred.Uid), int(u.cred.Gid))
	}
	e.mustGit(e.repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(e.repo, "README"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if u.cred != nil {
		os.Chown(filepath.Join(e.repo, "README"), int(u.cred.Uid), int(u.cred.Gid))
	}
	e.mustGit(e.repo, "add", "README")
	e.mustGit(e.repo, "commit", "-q", "-m", "initial")
	e.common = filepath.Join(e.repo, ".git")
	return e
}

// cmd is argv run as the env's user in dir, with a plain environment: the user's HOME, no
// GIT_* variable, no system git configuration.
func (e *taskEnv) cmd(ctx context.Context, dir string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	// PAGER is git's pager only when no configuration names one (core.pager): without it,
	// less would wait for a key on the terminal.
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + e.home, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "PAGER=cat"}
	if e.user.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.user.cred}
	}
	return cmd
}

// run runs argv and returns its exit status and combined output; it fails the test only
// if argv could not run at all or ran longer than a minute.
func (e *taskEnv) run(dir string, argv ...string) (int, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.cmd(ctx, dir, argv...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ctx.Err() == nil:
		return ee.ExitCode(), out.String()
	case err != nil:
		e.t.Fatalf("%s in %s: %v\n%s", strings.Join(argv, " "), dir, err, out.String())
	}
	return 0, out.String()
}

func (e *taskEnv) mustGit(dir string, args ...string) string {
	e.t.Helper()
	code, out := e.run(dir, append([]string{"git"}, args...)...)
	if code != 0 {
		e.t.Fatalf("git %s in %s: exit %d\n%s", strings.Join(args, " "), dir, code, out)
	}
	return strings.TrimSpace(out)
}

// autobox runs `autobox task COMMAND --project … --tasks-dir … --id … ARGS`.
func (e *taskEnv) autobox(command string, args ...string) (int, string) {
	e.t.Helper()
	full := append([]string{e.bin, "task", command, "--project", e.repo, "--tasks-dir", e.tasks, "--id", e.id}, args...)
	return e.run(e.base, full...)
}

// runNative runs script as the harness of a native task and returns its status and output.
// It also learns where the task's worktree is.
func (e *taskEnv) runNative(script string) (int, string) {
	e.t.Helper()
	code, out := e.autobox("run", "--kind", "native", "--", "/bin/sh", "-c", script)
	e.locate()
	return code, out
}

// locate finds the task's worktree, <tasks>/proj-<hash>/<id>; "" if there is none.
func (e *taskEnv) locate() {
	e.t.Helper()
	matches, _ := filepath.Glob(filepath.Join(e.tasks, "proj-*", e.id))
	if len(matches) > 1 {
		e.t.Fatalf("task worktrees: %v", matches)
	}
	e.worktree = ""
	if len(matches) == 1 {
		e.worktree = matches[0]
	}
}

// admin is the task worktree's admin directory in the repository.
func (e *taskEnv) admin() string {
	return filepath.Join(e.common, "worktrees", e.id)
}

// markersMade lists the markers that exist.
func (e *taskEnv) markersMade() []string {
	entries, _ := os.ReadDir(e.markers)
	var out []string
	for _, d := range entries {
		out = append(out, d.Name())
	}
	return out
}

// gitTTY runs git with a pseudo-terminal as its standard input and output, so that it
// starts its pager. It returns when git has exited.
func (e *taskEnv) gitTTY(dir string, args ...string) {
	e.t.Helper()
	master, slave, err := openPTY()
	if err != nil {
		e.t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := e.cmd(ctx, dir, append([]string{"git"}, args...)...)
	cmd.Env = append(cmd.Env, "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty = true, true
	if err := cmd.Start(); err != nil {
		slave.Close()
		e.t.Fatal(err)
	}
	slave.Close()
	go io.Copy(io.Discard, master) // ends with EIO when the last writer is gone
	cmd.Wait()
}

// clearImmutable clears the immutable attribute of every file below dir.
func clearImmutable(dir string) {
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		defer unix.Close(fd)
		if flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS); err == nil && flags&0x10 != 0 {
			unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags&^0x10)
		}
		return nil
	})
}

// immutable reports whether path has the immutable attribute.
func immutable(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	return err == nil && flags&0x10 != 0
}

// canPin reports whether a file in dir can be made immutable.
func canPin(dir string) bool {
	f, err := os.CreateTemp(dir, "pin-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fd := int(f.Fd())
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags|0x10) != nil {
		return false
	}
	unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags)
	return true
}

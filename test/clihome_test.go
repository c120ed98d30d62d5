//go:build linux

// Running the binary as a user runs it from a shell: in a private HOME, state
// and data dir (cliHome), with what it printed and its exit status kept
// (cliRun), and no process of it left behind once a run has ended.

package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cliHome is a private HOME, state dir and data dir for command-line runs.
type cliHome struct {
	t     *testing.T
	dir   string
	state string
	env   []string
	// sessions: runs may leave the session server running (see TestCLISession).
	sessions bool
}

func newCLIHome(t *testing.T) *cliHome {
	t.Helper()
	home := t.TempDir()
	h := &cliHome{t: t, dir: home, state: filepath.Join(home, "state")}
	h.env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"AUTOBOX_STATE_DIR=" + h.state,
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
	}
	return h
}

// cliRun is what one run of the binary printed and how it exited.
type cliRun struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r cliRun) String() string {
	return fmt.Sprintf("autobox %s: exit %d\nstdout: %q\nstderr: %q", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs the binary with stdin and waits for it; no process it started may outlive it.
func (h *cliHome) run(stdin string, args ...string) cliRun {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hung run fails (exit -1), not hangs
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = h.env
	cmd.Dir = h.dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliRun{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("autobox %s: %v", strings.Join(args, " "), err)
	}
	if h.sessions {
		return r
	}
	noLeftovers(h.t)
	if cmd.Process != nil {
		checkNothingLeft(h.t, cmd.Process.Pid)
	}
	return r
}

// want checks the exit status and that stdout and stderr contain the given texts.
func (h *cliHome) want(r cliRun, code int, stdout, stderr string) {
	h.t.Helper()
	if r.code != code || !strings.Contains(r.stdout, stdout) || !strings.Contains(r.stderr, stderr) {
		h.t.Errorf("want exit %d, stdout with %q, stderr with %q; got %s", code, stdout, stderr, r)
	}
}

// startSession starts a session with `autobox exec ARGS...` (--yield among
// them) and gives its id; a run that starts none fails the test.
func (h *cliHome) startSession(args ...string) string {
	h.t.Helper()
	r := h.run("", append([]string{"exec"}, args...)...)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(id, "s-") {
		h.t.Fatalf("exec --yield: %s", r)
	}
	return id
}

// noLeftovers fails the test if a process running the autobox binary (a worker, a
// launcher) is still alive once a command-line run has ended.
func noLeftovers(t *testing.T) {
	t.Helper()
	if left := binLeft(); len(left) > 0 {
		t.Errorf("processes of the autobox binary outlived the command: %v", left)
	}
}

// waitSessionServerGone waits for a command line's session server to end by
// itself after its last session.
func waitSessionServerGone(t *testing.T) {
	t.Helper()
	if left := binLeft(); len(left) > 0 {
		t.Fatalf("the session server did not end: %v", left)
	}
}

// binLeft waits until no process runs the autobox binary, and lists those
// still running if some do after 30 s. A session server, this test's or an
// earlier one's, ends by itself 5 s after its last session (cli's
// sessionLinger); the rest is for a loaded machine.
func binLeft() []string {
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left := procsOf(bin); len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}

// openPTY opens a pseudo-terminal pair.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

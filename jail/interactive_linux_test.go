package jail

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/wire"
	"github.com/autobox-dev/autobox/policy"
)

// readUntil reads r until its text contains want, or fails the test after a
// while; it returns what it read.
func readUntil(t *testing.T, r *os.File, want string) string {
	t.Helper()
	var got strings.Builder
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(got.String(), want) {
		_ = r.SetReadDeadline(deadline)
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("reading until %q: %v; read %q", want, err, got.String())
		}
	}
	return got.String()
}

// startInteractive starts argv in sb through a pool of one launcher, with in,
// its output going to out.
func startInteractive(t *testing.T, sb policy.Sandbox, argv []string, out *os.File, in *Interactive) *Tree {
	t.Helper()
	pool := NewPool(testExe(t), 1, nil)
	t.Cleanup(pool.Close)
	tree, err := pool.StartInteractive(&Spec{Argv: argv, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}, out, out, 64<<20, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tree.Kill)
	return tree
}

// TestInteractivePipe: a command started with a stdin pipe reads what is
// written to it and sees its end; Signal reaches its process group, not after
// it has exited, and only the signals a person sends.
func TestInteractivePipe(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, _ jailMode) {
		inR, inW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer inW.Close()
		outR, outW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer outR.Close()
		script := `read line; echo "got $line"; trap 'echo caught; exit 7' INT; echo ready; while :; do sleep 0.05; done`
		tree := startInteractive(t, basePolicy(t), []string{"/bin/sh", "-c", script}, outW, &Interactive{Stdin: inR})
		inR.Close()
		outW.Close()
		if _, err := inW.WriteString("hello\n"); err != nil {
			t.Fatal(err)
		}
		readUntil(t, outR, "got hello\nready\n")
		if err := tree.Signal("SIGSTOP"); !errors.Is(err, ErrPolicy) {
			t.Errorf("Signal(SIGSTOP) = %v, want ErrPolicy", err)
		}
		if err := tree.Signal("SIGINT"); err != nil {
			t.Fatal(err)
		}
		readUntil(t, outR, "caught")
		res, err := tree.Wait()
		if err != nil || res.ExitCode != 7 {
			t.Errorf("Wait = %+v, %v; want exit 7 from the trap", res, err)
		}
		if err := tree.Signal("SIGKILL"); err != nil {
			t.Errorf("Signal after the end = %v, want nil", err)
		}
	})
}

// TestInteractiveTerminal: on a terminal the command is a session leader with
// the terminal as its controlling tty (isatty, /dev/tty, job control), and it
// can name it when its node is in the policy.
func TestInteractiveTerminal(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, m jailMode) {
		ptm, slave, err := pty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal: %v", err)
		}
		master := pollable(t, ptm)
		defer master.Close()
		sb := basePolicy(t)
		sb.Devices = append(sb.Devices, "/dev/tty", slave.Name())
		sb.ReadOnly = append(sb.ReadOnly, "/proc") // where ttyname looks first
		script := `test -t 0 && test -t 1 && test -t 2 && echo isatty; echo hi > /dev/tty && echo devtty; tty; read x; echo "read $x"`
		tree := startInteractive(t, sb, []string{"/bin/sh", "-c", script}, slave, &Interactive{Stdin: slave, Terminal: true})
		name := slave.Name()
		if m.ns {
			// /dev/pts is the call's own there: the terminal is bound at
			// /dev/console, where ttyname(3) finds it.
			name = wire.TerminalPath
		}
		slave.Close()
		got := readUntil(t, master, name)
		for _, want := range []string{"isatty", "hi\r\ndevtty"} {
			if !strings.Contains(got, want) {
				t.Errorf("output %q lacks %q", got, want)
			}
		}
		if _, err := master.WriteString("typed\n"); err != nil {
			t.Fatal(err)
		}
		readUntil(t, master, "read typed")
		if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
			t.Errorf("Wait = %+v, %v", res, err)
		}
	})
}

// pollable is a non-blocking copy of f (which it closes) that Go's poller
// serves, so that reads take deadlines.
func pollable(t *testing.T, f *os.File) *os.File {
	t.Helper()
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), f.Name())
}

// TestInteractiveNeedsStdin: StartInteractive without stdin is a mistake.
func TestInteractiveNeedsStdin(t *testing.T) {
	pool := NewPool(testExe(t), 1, nil)
	defer pool.Close()
	out := tempFile(t)
	if _, err := pool.StartInteractive(&Spec{Argv: []string{"/bin/true"}}, out, out, 0, &Interactive{}); !errors.Is(err, ErrPolicy) {
		t.Errorf("err = %v, want ErrPolicy", err)
	}
}

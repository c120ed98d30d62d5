//go:build linux

package test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail"
)

// Regression tests for the escapes of issue 16: processes that outlived their
// call by killing or starving their launcher (A, B), host unix datagram sockets
// reached with the network off (C). Each runs with the namespaces a root
// server uses (pid namespace, private root) and without them, as an
// unprivileged user's server runs where user namespaces are refused
// (AUTOBOX_NO_NAMESPACES=1); an ordinary user's tests run with the user
// namespaces where it has them.

// serverMode is one way of running the server for these tests.
type serverMode struct {
	name string
	env  []string
	ns   bool // launchers get a pid namespace and commands a private root
}

func serverModes(t *testing.T) []serverMode {
	modes := []serverMode{{name: "no-namespaces", env: []string{jail.NoNamespacesEnv + "=1"}}}
	switch {
	case os.Geteuid() == 0:
		modes = append(modes, serverMode{name: "namespaces", ns: true})
	case hostMode() == jail.ModeUserNS:
		modes = append(modes, serverMode{name: "user-namespaces", ns: true})
	}
	return modes
}

// eachServerMode runs f with a server of every mode.
func eachServerMode(t *testing.T, f func(t *testing.T, s *session, m serverMode)) {
	requireSandbox(t)
	for _, m := range serverModes(t) {
		t.Run(m.name, func(t *testing.T) { f(t, startEnv(t, m.env), m) })
	}
}

// processesNamed lists the live processes whose command line is exactly argv.
func processesNamed(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && bytes.Equal(b, want) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// wantNoSurvivor fails if a process with command line argv is alive after the
// call has returned (no grace: the call returns once its tree is gone), and
// kills it so that it does not disturb other tests. argv should hold a marker
// of this run alone (uniqueSeconds): a run of the suite beside this one runs
// the same commands.
func wantNoSurvivor(t *testing.T, what string, argv ...string) {
	t.Helper()
	for _, pid := range processesNamed(argv...) {
		t.Errorf("%s: %q (pid %d) outlived its call", what, strings.Join(argv, " "), pid)
		unix.Kill(pid, unix.SIGKILL)
	}
}

// TestEscapeKillLauncher (issue 16 A): a command that kills, stops or signals
// its launcher by pidfd, after leaving a daemon that called setsid and was
// orphaned to init, leaves nothing behind, and the call ends as the command
// does. The exact reproducer of the issue, then variants.
func TestEscapeKillLauncher(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		mounts := []map[string]any{toolsMount()}
		for i, attack := range []string{"kill -9 $PPID", "kill -STOP $PPID", "/mnt/tools/probe attack-pid pidfd $PPID", "/mnt/tools/probe attack-pid kill9 $PPID"} {
			marker := uniqueSeconds(70300 + i) // this run's alone, not a run's beside it
			script := fmt.Sprintf(`setsid bash -c "(sleep %s &) ; sleep 0.1"; sleep 0.2; %s; echo after $?; sleep 1`, marker, attack)
			o, isErr := s.exec(map[string]any{"command": bash(script), "timeoutMs": 5000, "mounts": mounts})
			// The launcher outlives the attack and reports: the command goes on
			// after the refused signal and exits 0.
			if isErr || o.Killed || o.code() != 0 || !strings.Contains(o.Stdout, "after 1") {
				t.Errorf("%s: %+v (tool error %v)", attack, o, isErr)
			}
			wantNoSurvivor(t, attack, "sleep", marker)
		}
		// Positive control: signals within the sandbox work.
		o, _ := s.exec(map[string]any{"command": bash(`sleep 30 & kill -9 $!; wait $!; echo $?`)})
		if o.Stdout != "137\n" {
			t.Errorf("kill of the command's own child: %+v", o)
		}
	})
}

// TestEscapeKillLauncherCLI is the reproducer on the command line.
func TestEscapeKillLauncherCLI(t *testing.T) {
	eachCLIMode(t, func(t *testing.T, h *cliHome, m serverMode) {
		marker := uniqueSeconds(70310)
		r := h.run("", "exec", "--timeout", "2s", "--", "bash", "-c", `setsid bash -c "(sleep `+marker+` &) ; sleep 0.1"; sleep 0.2; kill -9 $PPID; sleep 1`)
		if r.code != 0 || strings.Contains(r.stderr, "launcher failed") {
			t.Errorf("%s", r)
		}
		wantNoSurvivor(t, "cli", "sleep", marker)
	})
}

// eachCLIMode runs f with a command line home of every server mode.
func eachCLIMode(t *testing.T, f func(t *testing.T, h *cliHome, m serverMode)) {
	requireSandbox(t)
	for _, m := range serverModes(t) {
		t.Run(m.name, func(t *testing.T) {
			h := newCLIHome(t)
			h.env = append(h.env, m.env...)
			f(t, h, m)
		})
	}
}

// TestEscapeOOM (issue 16 B): 60 children touching memory at once under a
// small memoryMb, with a daemon set aside: whoever ends it (the RSS watchdog,
// the kernel's OOM killer in the call's cgroup), the launcher survives to
// report a memory kill, and nothing is left.
func TestEscapeOOM(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		// Each child holds its memory for a minute: however slowly a loaded
		// machine starts them, they are all alive at once (past the limit)
		// before the first lets go.
		marker := uniqueSeconds(70320)
		script := `setsid sleep ` + marker + ` & for i in $(seq 60); do /mnt/tools/probe hog 6 60 & done; wait`
		o, isErr := s.exec(map[string]any{"command": bash(script), "memoryMb": 256, "timeoutMs": 90000, "mounts": []map[string]any{toolsMount()}})
		if !isErr || !o.Killed || !strings.Contains(o.Stderr, "memory limit exceeded") {
			t.Errorf("want a memory kill, got %+v (tool error %v)", o, isErr)
		}
		wantNoSurvivor(t, "oom", "sleep", marker)
		// Positive control: the same just under the limit runs to its end.
		o, isErr = s.exec(map[string]any{"command": bash(`for i in $(seq 4); do /mnt/tools/probe hog 6 >/dev/null & done; wait; echo done`), "memoryMb": 256, "timeoutMs": 15000, "mounts": []map[string]any{toolsMount()}})
		if isErr || o.Stdout != "done\n" {
			t.Errorf("under the limit: %+v", o)
		}
	})
}

// TestLauncherOOMScore: a running command has the highest OOM score, its
// launcher the lowest where autobox may set it (CAP_SYS_RESOURCE), else the
// server's own.
func TestLauncherOOMScore(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	// The command runs until the test has read the scores (the gate).
	gate := t.TempDir()
	done := make(chan execOut, 1)
	go func() {
		o, _ := s.exec(map[string]any{"command": bash("until [ -e /mnt/gate/open ]; do sleep 0.01; done"), "timeoutMs": 600000,
			"mounts": []map[string]any{{"hostPath": gate, "sandboxPath": "/mnt/gate", "mode": "ro"}}})
		done <- o
	}()
	var launcher, command int
	for command == 0 {
		select {
		case o := <-done:
			t.Fatalf("the command ended before it was seen running: %+v", o)
		case <-time.After(20 * time.Millisecond):
		}
		// The shell, not a fork of it about to run sleep: the one whose
		// parent is no such shell (the gate's path in it may be rewritten to
		// the host's).
		parents := map[int]int{}
		for _, p := range descendants(s.cmd.Process.Pid) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if strings.HasPrefix(string(cmdline), "/bin/bash\x00") && strings.Contains(string(cmdline), "until [ -e ") {
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
				if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 {
					f := strings.Fields(string(stat[i+2:]))
					parents[p], _ = strconv.Atoi(f[1])
				}
			}
		}
		for p, pp := range parents {
			if _, fork := parents[pp]; !fork {
				command, launcher = p, pp
			}
		}
	}
	score := func(pid int) string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
		return strings.TrimSpace(string(b))
	}
	want := score(os.Getpid())
	if hasCap(unix.CAP_SYS_RESOURCE) {
		want = "-1000"
	}
	// The launcher lowers its own score once the command runs (jail's
	// oomAdjust.settle), a moment after the command is seen: wait for it.
	for deadline := time.Now().Add(time.Minute); score(launcher) != want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if l, c := score(launcher), score(command); l != want || c != "1000" {
		t.Errorf("OOM score adjustment: launcher %q, command %q; want %q and 1000", l, c, want)
	}
	writeFile(t, filepath.Join(gate, "open"), "")
	if o := <-done; o.code() != 0 {
		t.Errorf("the command, its gate open: %+v", o)
	}
}

// hasCap reports whether this process holds capability c.
func hasCap(c int) bool {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return n&(1<<c) != 0
		}
	}
	return false
}

// TestForkBomb (issue 16 defect 5): a fork bomb under the default limits ends
// as a kill the result names, not as a launcher failure; a call made meanwhile
// and one made after work, and nothing of the bomb is left.
func TestForkBomb(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		var wg sync.WaitGroup
		wg.Add(1)
		var o execOut
		var isErr bool
		go func() {
			defer wg.Done()
			o, isErr = s.exec(map[string]any{"command": bash(`f(){ f|f& }; f; sleep 4`), "timeoutMs": 1500})
		}()
		time.Sleep(300 * time.Millisecond)
		// Answered, whenever: a busy machine slows it, the bomb must not stop it.
		if p, _ := s.exec(map[string]any{"command": []string{"echo", "meanwhile"}, "timeoutMs": 30000}); p.Stdout != "meanwhile\n" {
			t.Errorf("a call during the bomb: %+v", p)
		}
		wg.Wait()
		if !isErr || !o.Killed || strings.Contains(o.Stderr, "launcher") {
			t.Errorf("fork bomb: want a kill with its reason, got %+v", o)
		}
		if p, _ := s.exec(map[string]any{"command": []string{"echo", "after"}, "timeoutMs": 30000}); p.Stdout != "after\n" {
			t.Errorf("a call after the bomb: %+v", p)
		}
	})
}

// TestEscapeUnixDatagram (issue 16 C): with the network off no named unix
// socket outside the call's mounts can be reached by any send, from any socket
// the command can get. With namespaces the socket does not exist for the
// command (its root holds its mounts only), and datagram unix sockets are
// refused anyway; without them, datagram socket pairs, the only unix sockets
// that can be addressed, are refused.
func TestEscapeUnixDatagram(t *testing.T) {
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		dir := t.TempDir()
		path := filepath.Join(dir, "log.sock")
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		// Reachable by anyone who may: a root server without namespaces runs
		// its commands as another uid.
		for _, p := range []string{filepath.Dir(dir), dir, path} {
			os.Chmod(p, 0o777)
		}
		received := func() []string {
			var got []string
			buf, oob := make([]byte, 256), make([]byte, 256)
			for {
				ln.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				n, oobn, _, _, err := ln.ReadMsgUnix(buf, oob)
				if err != nil {
					return got
				}
				msg := string(buf[:n])
				if oobn > 0 {
					msg += " +fd"
					if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
						for _, cm := range msgs {
							fds, _ := unix.ParseUnixRights(&cm)
							for _, fd := range fds {
								unix.Close(fd)
							}
						}
					}
				}
				got = append(got, msg)
			}
		}
		ways := []string{"sendto", "sendmsg", "sendmsg-fd", "sendmmsg", "connect"}
		for _, how := range ways {
			wantDenied(t, "datagram "+how+" to a host socket", s.probe(nil, nil, "unixgram", how, path))
		}
		for _, typ := range []string{"stream", "seqpacket"} {
			s.probe(nil, nil, "unixpair", typ, path) // refused or sent to its peer
		}
		if got := received(); len(got) > 0 {
			t.Errorf("the host socket received %q", got)
		}
		if jail.UnixGuard() {
			// Where unix sockets are guarded, datagram ones are refused, even
			// where the host's socket is mounted or the network allowed (the
			// guard sees connects, not sends); the positive control is a
			// stream socket of the command's own.
			mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/sock", "mode": "rw"}}
			for _, how := range ways {
				wantDenied(t, "datagram "+how+" to a mounted host socket", s.probe(mounts, nil, "unixgram", how, "/mnt/sock/log.sock"))
				wantDenied(t, "datagram "+how+" with the network", s.probe(nil, map[string]any{"allowNetwork": true}, "unixgram", how, path))
			}
			wantAllowed(t, "the command's own stream socket in the mount", s.probe(mounts, nil, "unix-self", "/mnt/sock/own.sock"))
			if got := received(); len(got) > 0 {
				t.Errorf("the host socket received %q", got)
			}
			return
		}
		// Positive controls: where the socket may be reached (on a kernel
		// without the guard, with the network allowed), every way delivers,
		// the descriptor too.
		mounts, extra, target := []map[string]any(nil), map[string]any{"allowNetwork": true}, path
		for _, how := range ways {
			wantAllowed(t, "datagram "+how+" allowed", s.probe(mounts, extra, "unixgram", how, target))
		}
		got := received()
		if len(got) != len(ways) || !strings.Contains(strings.Join(got, "|"), "probe sendmsg-fd +fd") {
			t.Errorf("the allowed sends delivered %q", got)
		}
	})
}

package test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autobox-dev/autobox/internal/testnet"
	"github.com/autobox-dev/autobox/jail"
)

func TestExecBasics(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o, isErr := s.exec(map[string]any{"command": []string{"echo", "hi"}})
	if isErr || o.Stdout != "hi\n" || o.code() != 0 || o.Killed {
		t.Errorf("echo hi: isError=%v %+v", isErr, o)
	}
	if o, _ := s.exec(map[string]any{"command": bash("echo out; echo err >&2; exit 3")}); o.code() != 3 || o.Stdout != "out\n" || o.Stderr != "err\n" {
		t.Errorf("exit 3: %+v", o)
	}
	o, isErr = s.exec(map[string]any{"command": []string{"no-such-program-xyz"}})
	if !isErr || o.ExitCode != nil || !strings.Contains(o.Stderr, "no-such-program-xyz") {
		t.Errorf("missing program: isError=%v %+v", isErr, o)
	}
	// Arguments arrive byte-exact.
	weird := []string{"a b", "line1\nline2", "--leading-dash", "$(echo no)", "*", "'q'", `"dq"`, "", "ü✓"}
	o = s.probe(nil, nil, append([]string{"args"}, weird...)...)
	var want strings.Builder
	for _, w := range weird {
		fmt.Fprintf(&want, "[%s]\n", w)
	}
	if o.Stdout != want.String() {
		t.Errorf("args: got %q want %q", o.Stdout, want.String())
	}
}

func TestExecEnvironment(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o, _ := s.exec(map[string]any{"command": bash("env | sort; echo cwd=$(pwd); ulimit -c")})
	if strings.Contains(o.Stdout, "canary-7c1e") || strings.Contains(o.Stdout, "AUTOBOX_") {
		t.Errorf("server environment leaked: %s", o.Stdout)
	}
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "BASH_ENV=/dev/null", "ENV=/dev/null", "HOME=/"} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("env lacks %q:\n%s", want, o.Stdout)
		}
	}
	var home string
	for _, l := range strings.Split(o.Stdout, "\n") {
		if strings.HasPrefix(l, "HOME=") {
			home = strings.TrimPrefix(l, "HOME=")
		}
	}
	// TMPDIR is the scratch dir, or, where the command has a root of its
	// own, /tmp, which is a directory of it there (and XDG_RUNTIME_DIR its
	// own in /run).
	tmpdir, runtime := home, home
	if namespaced() {
		tmpdir, runtime = "/tmp", "/run/user/"
	}
	if !strings.Contains(o.Stdout, "TMPDIR="+tmpdir+"\n") || !strings.Contains(o.Stdout, "XDG_RUNTIME_DIR="+runtime) || !strings.Contains(o.Stdout, "cwd="+home) {
		t.Errorf("TMPDIR %s, XDG_RUNTIME_DIR %s and cwd (the scratch dir %s) wanted:\n%s", tmpdir, runtime, home, o.Stdout)
	}
	// Only fds 0-2 are inherited; stdin is /dev/null; a new session with no terminal.
	o = s.probe(nil, nil, "fds")
	if o.Stdout != "fds 0,1,2\n" { // the probe leaves out its own (its handle on /proc/self/fd, the Go runtime's cgroup files)
		t.Errorf("inherited fds: %q", o.Stdout)
	}
	o, _ = s.exec(map[string]any{"command": bash("readlink /proc/self/fd/0; cat; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; tty")})
	for _, want := range []string{"/dev/null", "NoNewPrivs:\t1", "Seccomp:\t2", "not a tty"} {
		if !strings.Contains(o.Stdout, want) {
			t.Errorf("want %q in:\n%s\n%s", want, o.Stdout, o.Stderr)
		}
	}
	// The scratch dir is removed afterwards, even when the child made it hard to.
	o, _ = s.exec(map[string]any{"command": bash("mkdir -p $HOME/locked/deep && touch $HOME/locked/deep/f && chmod 000 $HOME/locked/deep $HOME/locked && ln -s /etc $HOME/link && echo $HOME")})
	scratch := strings.TrimSpace(o.Stdout)
	if scratch == "" {
		t.Fatalf("no scratch path: %+v", o)
	}
	// It is removed just after the call answers (a loaded machine may take a
	// while: the wait ends when it is gone).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(scratch); os.IsNotExist(err) {
			break
		}
	}
	if _, err := os.Lstat(scratch); !os.IsNotExist(err) {
		t.Errorf("scratch dir %s still exists after the call (%v)", scratch, err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Errorf("removing the scratch dir followed its link: %v", err)
	}
}

func TestExecFilesystem(t *testing.T) {
	requireSandbox(t)
	execFilesystem(t, start(t))
}

// execFilesystem is TestExecFilesystem on s (TestSessionSandbox runs it too).
func execFilesystem(t *testing.T, s *session) {
	ro, rw, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ro, "a.txt"), "ro-data")
	writeFile(t, filepath.Join(rw, "w.txt"), "rw-data")
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret")
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(rw, "escape"))
	mustSymlink(t, "w.txt", filepath.Join(rw, "inside"))
	mounts := []map[string]any{
		toolsMount(),
		{"hostPath": ro, "sandboxPath": "/mnt/ro", "mode": "ro"},
		{"hostPath": rw, "sandboxPath": "/mnt/rw", "mode": "rw"},
	}
	run := func(script string) execOut {
		o, _ := s.exec(map[string]any{"command": bash(script), "mounts": mounts})
		return o
	}
	// Positive controls.
	if o := run("cat /mnt/ro/a.txt /mnt/rw/w.txt /mnt/rw/inside"); o.Stdout != "ro-datarw-datarw-data" {
		t.Errorf("reads in mounts: %+v", o)
	}
	if o := run("echo new > /mnt/rw/new.txt && mkdir /mnt/rw/d && ln -s w.txt /mnt/rw/l && mv /mnt/rw/new.txt /mnt/rw/d/ && ln /mnt/rw/w.txt /mnt/rw/hard && rm /mnt/rw/hard && echo done"); o.Stdout != "done\n" {
		t.Errorf("writes in rw mount: %+v", o)
	}
	if o := run("ls /usr/bin/env >/dev/null && cat /etc/ssl/certs/ca-certificates.crt >/dev/null && echo ok"); o.Stdout != "ok\n" {
		t.Errorf("system reads: %+v", o)
	}
	// Writes to the ro mount, every way.
	for _, script := range []string{
		"echo x > /mnt/ro/a.txt",
		"echo x >> /mnt/ro/a.txt",
		": > /mnt/ro/a.txt",
		"truncate -s 0 /mnt/ro/a.txt",
		"echo x > /mnt/ro/new.txt",
		"mv /mnt/ro/a.txt /mnt/ro/b.txt",
		"mv /mnt/ro/a.txt /mnt/rw/stolen.txt",
		"rm /mnt/ro/a.txt",
		"mkdir /mnt/ro/d",
		"ln -s /etc/passwd /mnt/ro/l",
		"ln /mnt/ro/a.txt /mnt/rw/hard",
		"mkfifo /mnt/ro/f",
	} {
		if o := run(script); o.code() == 0 {
			t.Errorf("%q on a ro mount succeeded", script)
		}
	}
	if got := readFile(t, filepath.Join(ro, "a.txt")); got != "ro-data" {
		t.Errorf("ro file changed to %q", got)
	}
	// Modes and times: Landlock has no right for them; with namespaces, autobox
	// gives the command a root of its own where read-only paths are read-only mounts.
	if namespaced() {
		for _, script := range []string{"chmod 777 /mnt/ro/a.txt", "touch -d 2001-01-01 /mnt/ro/a.txt", "chmod 777 /usr/bin/env", "chown 1:1 /mnt/ro/a.txt", "chmod 600 " + filepath.Join(outside, "secret.txt")} {
			if o := run(script); o.code() == 0 {
				t.Errorf("%q succeeded", script)
			}
		}
		if fi, _ := os.Stat(filepath.Join(ro, "a.txt")); fi.Mode().Perm() != 0o644 {
			t.Errorf("ro file mode changed to %v", fi.Mode())
		}
		if o := run("chmod 600 /mnt/rw/w.txt && touch -d 2001-01-01 /mnt/rw/w.txt && echo ok"); o.Stdout != "ok\n" {
			t.Errorf("chmod/touch in the rw mount (positive control): %+v", o)
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), ro) {
			t.Errorf("a sandbox mount leaked into the host's mount table")
		}
	} else {
		t.Log("landlock-only: chmod on read-only mounts is not enforced (see SECURITY.md)")
	}
	// Reads and writes outside the mounts.
	home, _ := os.UserHomeDir()
	for _, script := range []string{
		"cat " + filepath.Join(outside, "secret.txt"),
		"cat /mnt/rw/escape",
		"ls " + outside,
		"echo x > " + filepath.Join(outside, "new"),
		"ln " + filepath.Join(outside, "secret.txt") + " /mnt/rw/hardlink",
		"cat /etc/shadow",
		"ls /root",
		"ls " + home,
		"ls /home",
		"ls " + s.state,
	} {
		if o := run(script); o.code() == 0 {
			t.Errorf("%q outside the mounts succeeded: %q", script, o.Stdout)
		}
	}
	// /tmp: the host's is denied; in a private root it is the call's own.
	o := run("ls /tmp; echo x > /tmp/autobox-escape-test")
	if namespaced() != (o.code() == 0) {
		t.Errorf("/tmp in mode %s: %+v", hostMode(), o)
	}
	if _, err := os.Stat("/tmp/autobox-escape-test"); err == nil {
		os.Remove("/tmp/autobox-escape-test")
		t.Error("a sandboxed command wrote to /tmp")
	}
	if _, err := os.Stat(filepath.Join(rw, "hardlink")); err == nil {
		t.Error("a hard link to a file outside the mounts was created")
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestExecNetwork(t *testing.T) {
	requireSandbox(t)
	execNetwork(t, start(t))
}

// execNetwork is TestExecNetwork on s (TestSessionSandbox runs it too).
func execNetwork(t *testing.T, s *session) {
	l := testnet.TCP(t)
	u, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	on := map[string]any{"allowNetwork": true}
	wantAllowed(t, "tcp with allowNetwork", s.probe(nil, on, "tcp", l.Addr().String()))
	wantDenied(t, "tcp without allowNetwork", s.probe(nil, nil, "tcp", l.Addr().String()))
	wantAllowed(t, "udp with allowNetwork", s.probe(nil, on, "udp", u.LocalAddr().String()))
	if namespaced() {
		// A namespace with loopback alone: the datagram is sent there, and
		// never reaches the host's socket.
		var b [64]byte
		u.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for { // the allowed one, first
			if _, _, err := u.ReadFrom(b[:]); err != nil {
				break
			}
		}
		s.probe(nil, nil, "udp", u.LocalAddr().String())
		u.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		for {
			n, _, err := u.ReadFrom(b[:])
			if err != nil {
				break
			}
			if string(b[:n]) == "ping" {
				t.Errorf("udp without allowNetwork reached the host")
			}
		}
	} else {
		wantDenied(t, "udp without allowNetwork", s.probe(nil, nil, "udp", u.LocalAddr().String()))
	}
	wantAllowed(t, "listen with allowNetwork", s.probe(nil, on, "listen-tcp"))
	// Raw socket families: AF_INET=2, AF_INET6=10, AF_NETLINK=16 (the probe's
	// protocol 0, routing), AF_PACKET=17.
	families := []string{"2", "10", "16", "17"}
	if namespaced() {
		// In a namespace of its own, a command may listen on its loopback,
		// and see its routes.
		wantAllowed(t, "listen without allowNetwork, loopback alone", s.probe(nil, nil, "listen-tcp"))
		wantAllowed(t, "netlink route socket, loopback alone", s.probe(nil, nil, "socket", "16", "2"))
		families = families[3:]
	} else {
		wantDenied(t, "listen without allowNetwork", s.probe(nil, nil, "listen-tcp"))
	}
	for _, fam := range families {
		wantDenied(t, "socket family "+fam, s.probe(nil, nil, "socket", fam, "2"))
	}
	if namespaced() {
		// Unix sockets of its own, whatever its network (TestHostSockets:
		// none of the host's).
		wantAllowed(t, "AF_UNIX socket without allowNetwork", s.probe(nil, nil, "socket", "1", "1"))
	} else {
		// Without a root of its own, socket(AF_UNIX) needs allowNetwork: a
		// named socket is a door to a host service.
		wantDenied(t, "AF_UNIX socket without allowNetwork", s.probe(nil, nil, "socket", "1", "1"))
	}
	wantAllowed(t, "AF_UNIX socket with allowNetwork", s.probe(nil, on, "socket", "1", "1"))
	wantAllowed(t, "socketpair(AF_UNIX) without allowNetwork", s.probe(nil, nil, "socketpair"))

	// Abstract unix sockets outside the sandbox are out of reach (Landlock scoping).
	if jail.Probe().LandlockABI < 6 {
		t.Skip("Landlock ABI < 6: abstract unix sockets are not scoped on this kernel")
	}
	name := fmt.Sprintf("@autobox-test-%d", os.Getpid())
	ul, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	testnet.Serve(t, ul)
	wantDenied(t, "abstract unix socket outside", s.probe(nil, on, "unix", name))
	// A pathname socket of the host in a mount: reachable only without a
	// root of its own and with the whole network (TestHostSockets has the
	// rest, with positive controls).
	sockDir := t.TempDir()
	pl, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	testnet.Serve(t, pl)
	sockMount := []map[string]any{{"hostPath": sockDir, "sandboxPath": "/mnt/sock", "mode": "rw"}}
	if namespaced() {
		wantDenied(t, "the host's pathname unix socket in a mount", s.probe(sockMount, on, "unix", "/mnt/sock/s"))
		wantAllowed(t, "the command's own socket in the same mount", s.probe(sockMount, on, "unix-self", "/mnt/sock/own"))
	} else {
		wantAllowed(t, "pathname unix socket in a mount", s.probe(sockMount, on, "unix", "/mnt/sock/s"))
	}
	wantDenied(t, "pathname unix socket without allowNetwork", s.probe(sockMount, nil, "unix", "/mnt/sock/s"))
}

func TestExecProcesses(t *testing.T) {
	requireSandbox(t)
	execProcesses(t, start(t))
}

// execProcesses is TestExecProcesses on s (TestSessionSandbox runs it too).
func execProcesses(t *testing.T, s *session) {
	server := fmt.Sprint(s.cmd.Process.Pid)
	// Signals and ptrace out of the sandbox are denied; inside they work.
	if jail.Probe().LandlockABI >= 6 {
		wantDenied(t, "signal to the server", s.probe(nil, nil, "kill", server, "0"))
		wantDenied(t, "signal to init", s.probe(nil, nil, "kill", "1", "0"))
	}
	if o, _ := s.exec(map[string]any{"command": bash("sleep 5 & kill $! && wait $!; echo status=$?")}); o.Stdout != "status=143\n" {
		t.Errorf("signal inside the sandbox: %+v", o)
	}
	wantDenied(t, "ptrace the server", s.probe(nil, nil, "ptrace", server))
	wantDenied(t, "unshare a user namespace", s.probe(nil, nil, "unshare"))
	// The server's /proc entries are out of reach; the command's own are not.
	for _, p := range []string{"/proc/" + server + "/environ", "/proc/" + server + "/root/etc/hostname", "/proc/" + server + "/mem"} {
		wantDenied(t, p, s.probe(nil, nil, "read", p))
	}
	wantDenied(t, "readlink server cwd", s.probe(nil, nil, "readlink", "/proc/"+server+"/cwd"))
	wantAllowed(t, "own /proc/self/status", s.probe(nil, nil, "read", "/proc/self/status"))
	// Nor are the launcher's ($PPID of the command), whose status pipe would let
	// the command forge its own exit.
	o, _ := s.exec(map[string]any{"command": bash(`echo x 2>/dev/null > /proc/$PPID/fd/4; echo pipe=$?; cat /proc/$PPID/environ >/dev/null 2>&1; echo environ=$?; cat /proc/self/environ >/dev/null; echo own=$?`)})
	if o.Stdout != "pipe=1\nenviron=1\nown=0\n" {
		t.Errorf("the launcher's /proc entries: %+v", o)
	}
}

func TestExecKillsWholeTree(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	marker := uniqueSeconds(31) // what findProcs finds is this test's alone
	// setsid + double fork + ignoring SIGTERM, both on timeout and after a normal exit.
	scripts := map[string]map[string]any{
		"timeout": {"command": bash("trap '' TERM; setsid bash -c '(trap \"\" TERM; exec sleep " + marker + ") &' ; (sleep " + marker + " &) ; sleep " + marker), "timeoutMs": 300},
		"exit":    {"command": bash("setsid bash -c '(trap \"\" TERM HUP; exec sleep " + marker + ") &' ; (nohup sleep " + marker + " >/dev/null 2>&1 &); echo started")},
	}
	for name, args := range scripts {
		o, _ := s.exec(args)
		if name == "timeout" && (!o.Killed || !strings.Contains(o.Stderr, "timeout")) {
			t.Errorf("%s: want killed by timeout, got %+v", name, o)
		}
		if name == "exit" && (o.Killed || o.Stdout != "started\n") {
			t.Errorf("%s: %+v", name, o)
		}
		if pids := findProcs("sleep " + marker); len(pids) > 0 {
			t.Errorf("%s: %d processes of the call survived it: %v", name, len(pids), pids)
		}
	}
}

func TestExecArgumentValidation(t *testing.T) {
	s := start(t)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "command"},
		{map[string]any{"command": []string{}}, "command is required"},
		{map[string]any{"command": "ls -la"}, "command"},
		{map[string]any{"command": []any{"ls", 5}}, "command"},
		{map[string]any{"command": []string{""}}, "empty"},
		{map[string]any{"command": []string{"echo", "a\x00b"}}, "NUL"},
		{map[string]any{"command": []string{"true"}, "timeoutMs": 0}, "timeoutMs must be between 1 and 600000"},
		{map[string]any{"command": []string{"true"}, "timeoutMs": 600001}, "timeoutMs must be between 1 and 600000, got 600001 (with yieldMs, a session may run up to 3600000)"},
		{map[string]any{"command": []string{"true"}, "memoryMb": 15}, "memoryMb must be between 16 and 2048"},
		{map[string]any{"command": []string{"true"}, "memoryMb": 4096}, "memoryMb must be between 16 and 2048"},
		{map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": "/tmp", "sandboxPath": "/mnt/t", "mode": "write"}}}, `mode "write"`},
	}
	for _, c := range cases {
		res := s.callRaw("exec_command", c.args)
		if !res.IsError || !strings.Contains(errorOf(res), c.want) {
			t.Errorf("%v: want tool error mentioning %q, got isError=%v %s", c.args, c.want, res.IsError, textOf(res))
		}
	}
	if o, _ := s.exec(map[string]any{"command": []string{"true"}}); o.code() != 0 {
		t.Errorf("session broken after bad input: %+v", o)
	}
}

//go:build linux

package test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail"
)

// The modes of issue 19: what a server gives its commands depends on who runs
// it and what the host allows. As root: namespaces. As an ordinary user where
// user namespaces work: the same, inside a user namespace. Where neither:
// Landlock and seccomp alone (landlock-only), and a root server there runs
// its commands as another uid. Each test runs in every mode this process can
// make: the suite runs once as root and once as an ordinary user.

type isolationOut struct {
	execOut
	Isolation string `json:"isolation"`
	Error     string `json:"error"`
}

// TestModeInResults: every result names the mode its command ran in, and it
// is the one doctor names; a server that may not make user namespaces falls
// back to landlock-only, says so, and refuses allowHosts naming why.
func TestModeInResults(t *testing.T) {
	requireSandbox(t)
	want := jail.ModeLandlock
	switch {
	case os.Geteuid() == 0:
		want = jail.ModeRoot
	case hostMode() == jail.ModeUserNS:
		want = jail.ModeUserNS
	}
	if hostMode() != want {
		t.Logf("doctor's mode %q (uid %d)", hostMode(), os.Geteuid())
	}
	s := start(t)
	var o isolationOut
	s.call("exec_command", map[string]any{"command": []string{"true"}}, &o)
	if o.Isolation != hostMode() || o.code() != 0 {
		t.Errorf("default server: isolation %q, doctor %q: %+v", o.Isolation, hostMode(), o)
	}
	t.Run("user namespaces refused", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("a root server does not use user namespaces")
		}
		s := startNoUserNS(t, nil)
		var o isolationOut
		s.call("exec_command", map[string]any{"command": []string{"true"}}, &o)
		if o.Isolation != jail.ModeLandlock || o.code() != 0 {
			t.Errorf("under a filter that refuses user namespaces: %+v", o)
		}
		var d isolationOut
		isErr := s.call("exec_command", map[string]any{"command": []string{"true"}, "allowHosts": []string{"example.com"}}, &d)
		if !isErr || !strings.Contains(d.Error, "network namespace") || !strings.Contains(d.Error, "user namespaces are refused") {
			t.Errorf("allowHosts without user namespaces: %+v", d)
		}
		doctor := exec.Command(filepath.Join(toolsDir, "probe"), "nouserns", bin, "doctor")
		out, _ := doctor.CombinedOutput()
		if !strings.Contains(string(out), "mode              "+jail.ModeLandlock) || !strings.Contains(string(out), "clone(CLONE_NEWUSER) refused") {
			t.Errorf("doctor under the filter:\n%s", out)
		}
	})
}

// TestTmpIsTheCallsOwn: in a private root /tmp is the call's scratch dir,
// writable, and gone with the call; another call does not see it.
func TestTmpIsTheCallsOwn(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("mode %s has no private root", hostMode())
	}
	s := start(t)
	marker := fmt.Sprintf("autobox-tmp-%d", os.Getpid())
	o, _ := s.exec(map[string]any{"command": bash(`echo hi > /tmp/` + marker + ` && cat /tmp/` + marker + ` && cat "$HOME/.tmp/` + marker + `" && ls "$HOME" | wc -l`)})
	if o.code() != 0 || o.Stdout != "hi\nhi\n0\n" {
		t.Fatalf("writing /tmp: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), marker)); err == nil {
		t.Errorf("the command's /tmp file is in the host's /tmp")
	}
	o, _ = s.exec(map[string]any{"command": bash(`ls /tmp/` + marker)})
	if o.code() == 0 {
		t.Errorf("a later call sees the first call's /tmp: %+v", o)
	}
}

// TestLoopbackWithoutNetwork: with the network off, a command in a network
// namespace of its own may still serve and connect on loopback (a test
// suite's own server), and nothing leaves. Without namespaces the network off
// means no sockets at all.
func TestLoopbackWithoutNetwork(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	o := s.probe(nil, nil, "loopback")
	if namespaced() {
		wantAllowed(t, "loopback without network", o)
		wantDenied(t, "out of the namespace without network", s.probe(nil, nil, "tcp", "192.0.2.1:80"))
	} else {
		wantDenied(t, "loopback without network or namespace", o)
	}
	// Positive control: with the network, loopback works in every mode.
	wantAllowed(t, "loopback with network", s.probe(nil, map[string]any{"allowNetwork": true}, "loopback"))
}

// TestProcessLimitInKernel: under maxProcesses 64 a command cannot have more
// than 64 processes: forks past it fail with EAGAIN (root: the pids cgroup; an
// ordinary user: RLIMIT_NPROC in the call's own user namespace).
func TestProcessLimitInKernel(t *testing.T) {
	requireSandbox(t)
	if hostMode() == jail.ModeLandlock {
		t.Skip("without namespaces or cgroups the process limit is the watchdog's")
	}
	if hostMode() == jail.ModeUserNS && !jail.Isolations().NprocPerUserNS {
		t.Skip("before Linux 5.14 RLIMIT_NPROC counts every process of the user: the process limit is the watchdog's")
	}
	s := start(t)
	o := s.probe(nil, map[string]any{"maxProcesses": 64, "timeoutMs": 20000}, "forkmany", "200")
	var started int
	fmt.Sscanf(o.Stdout, "started %d", &started)
	if o.Killed && started == 0 {
		t.Skipf("killed before it reported: %+v", o)
	}
	if started == 0 || started > 63 || !strings.Contains(o.Stdout, "resource temporarily unavailable") {
		t.Errorf("forkmany 200 under maxProcesses 64: %+v", o)
	}
	// Positive control: under the limit every fork succeeds.
	o = s.probe(nil, map[string]any{"maxProcesses": 64}, "forkmany", "20")
	if !strings.HasPrefix(o.Stdout, "started 20; refused: <nil>") {
		t.Errorf("forkmany 20 under maxProcesses 64: %+v", o)
	}
}

// TestIPCNamespacePerCall: a System V segment a command makes is its call's
// alone: a later call cannot find it, and it is gone with the call.
func TestIPCNamespacePerCall(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("mode %s has no IPC namespace", hostMode())
	}
	s := start(t)
	key := 0x4a000000 + os.Getpid()%0xffff
	k := strconv.Itoa(key)
	// Positive control: within one call the segment is found.
	o, _ := s.exec(map[string]any{"command": bash("/mnt/tools/probe shm create " + k + " && /mnt/tools/probe shm find " + k), "mounts": []map[string]any{toolsMount()}})
	if o.code() != 0 || strings.Count(o.Stdout, "ok segment") != 2 {
		t.Fatalf("shm within a call: %+v", o)
	}
	wantDenied(t, "a later call's lookup", s.probe(nil, nil, "shm", "find", k))
	if _, err := unix.SysvShmGet(key, 0, 0); err == nil {
		t.Errorf("the call's segment is in this process's IPC namespace")
	}
}

// TestCommandCannotReachOutside: a command cannot name, signal or prlimit a
// process outside its call (the server here), in every namespaced mode.
func TestCommandCannotReachOutside(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("mode %s has no pid namespace", hostMode())
	}
	s := start(t)
	server := strconv.Itoa(s.cmd.Process.Pid)
	wantDenied(t, "prlimit of the server", s.probe(nil, nil, "prlimit", server))
	wantDenied(t, "signal 0 to the server", s.probe(nil, nil, "kill", server))
	o, _ := s.exec(map[string]any{"command": bash("ls /proc | grep -c '^[0-9]'")})
	if n, _ := strconv.Atoi(strings.TrimSpace(o.Stdout)); n == 0 || n > 5 {
		t.Errorf("processes a command sees: %+v", o)
	}
	// Positive control: on itself.
	wantAllowed(t, "prlimit of itself", s.probe(nil, nil, "prlimit", "0"))
}

// TestRootWithoutNamespacesIsNotRoot (issue 19, issue 20 item 3): a root
// server without namespaces runs commands as an unprivileged uid, so a
// root-owned file in a read-write mount cannot be made setuid.
func TestRootWithoutNamespacesIsNotRoot(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: it checks what a root server's commands may do")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "sh")
	if err := os.WriteFile(victim, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The scratch dirs' parent must be open to that uid, as /tmp is.
	tmp, err := os.MkdirTemp("", "autobox-e2e-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	s := startEnv(t, []string{jail.NoNamespacesEnv + "=1", "TMPDIR=" + tmp})
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/w", "mode": "rw"}}
	o, _ := s.exec(map[string]any{"command": bash(`id -u; chmod 4755 /mnt/w/sh; echo chmod $?; echo mine > /mnt/w/mine && chmod 700 /mnt/w/mine && echo own ok`), "mounts": mounts})
	if strings.HasPrefix(o.Stdout, "0\n") || !strings.Contains(o.Stdout, "chmod 1") || !strings.Contains(o.Stderr, "Operation not permitted") {
		t.Errorf("as root without namespaces: %+v", o)
	}
	if st, err := os.Stat(victim); err != nil || st.Mode()&os.ModeSetuid != 0 {
		t.Errorf("the root-owned file became setuid: %v %v", st.Mode(), err)
	}
	// Positive control: the command's own files are its to change.
	if !strings.Contains(o.Stdout, "own ok") {
		t.Errorf("chmod of the command's own file: %+v", o)
	}
}

// TestDelegatedCgroupV1 (issue 19): an ordinary user's server that runs in a
// cgroup subtree it may write (here a cgroup v1 memory and pids subtree that
// root hands to the test user, as a delegated cgroup v2 subtree under systemd
// is handed to a user) finds it and puts each command in a memory and a pids
// cgroup of its own. The systemd path itself is not exercised here.
func TestDelegatedCgroupV1(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: it hands a cgroup subtree to an ordinary user")
	}
	name := os.Getenv("AUTOBOX_TEST_USER")
	if name == "" {
		name = "autobox-test"
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s (make test makes it): %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	sub := fmt.Sprintf("autobox-e2e-delegated-%d", os.Getpid())
	var dirs []string
	for _, ctl := range []string{"memory", "pids"} {
		d := filepath.Join("/sys/fs/cgroup", ctl, sub)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("no cgroup v1 %s hierarchy to delegate: %v", ctl, err)
		}
		dirs = append(dirs, d)
		t.Cleanup(func() {
			// The server removed its own cgroups; the processes left are gone.
			for deadline := time.Now().Add(5 * time.Second); os.Remove(d) != nil && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
			}
		})
		for _, f := range []string{"", "cgroup.procs", "tasks"} {
			if err := os.Chown(filepath.Join(d, f), uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	home := t.TempDir()
	for _, d := range []string{filepath.Dir(home), home} {
		os.Chmod(d, 0o755)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	// runEnv runs the command line as the user in the subtree, with env.
	runEnv := func(env []string, args ...string) string {
		t.Helper()
		script := `for d in "$@"; do echo $$ > "$d/cgroup.procs" || exit 97; done; exec ` + bin + ` ` + strings.Join(args, " ")
		cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, dirs...)...)
		cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"), "TMPDIR=" + home}, env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	run := func(args ...string) string { t.Helper(); return runEnv(nil, args...) }
	doctor := run("doctor")
	userNS := strings.Contains(doctor, "user-namespaces:")
	if !strings.Contains(doctor, "memory cgroup     a hard kernel limit per command") || !strings.Contains(doctor, "process limit     kernel: a pids cgroup per command") {
		t.Fatalf("doctor as uid %d in a delegated subtree:\n%s", uid, doctor)
	}
	// Without namespaces the command names its cgroups by their host paths.
	out := runEnv([]string{jail.NoNamespacesEnv + "=1"}, "exec", "--memory", "100", "--max-processes", "23", "--", "sh", "-c", "'cat /proc/self/cgroup; echo; for c in memory pids; do d=/sys/fs/cgroup/$c$(sed -n \"s/^[0-9]*:$c://p\" /proc/self/cgroup); cat $d/memory.limit_in_bytes $d/pids.max 2>/dev/null; for f in memory.limit_in_bytes pids.max; do [ -e $d/$f ] && { echo 100000000 > $d/$f && echo WROTE $c $f || echo refused $c $f; }; done; echo $$ > $d/../cgroup.procs && echo LEFT $c || echo refused $c move; done'")
	for _, ctl := range []string{"memory", "pids"} {
		if !strings.Contains(out, ":"+ctl+":/"+sub+"/autobox-p") {
			t.Errorf("the command's %s cgroup is not one of its own below the delegated one:\n%s", ctl, out)
		}
	}
	// In its user namespace (the user's default mode), a view of its own
	// cgroups (syspaths.CgroupTree): the roots of /sys/fs/cgroup/memory and
	// pids, with the call's limits; nothing of the delegated subtree.
	view := run("exec", "--memory", "100", "--max-processes", "23", "--", "sh", "-c", "'cat /proc/self/cgroup; cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max; find /sys/fs/cgroup -mindepth 2 -type d | wc -l; echo 1 > /sys/fs/cgroup/pids/pids.max || echo write refused'")
	t.Logf("the command's view in the user's own mode (user namespaces: %v):\n%s", userNS, view)
	for _, want := range []string{":memory:/\n", ":pids:/\n", fmt.Sprintf("\n%d\n23\n0\n", 132<<20), "write refused"} {
		if userNS && !strings.Contains(view, want) {
			t.Errorf("the command's view of its cgroups in its user namespace lacks %q:\n%s", want, view)
		}
	}
	// Its cgroups' files are the user's, as the commands are: Landlock alone
	// keeps it from raising its limits or moving to the delegated parent.
	for _, want := range []string{fmt.Sprintf("\n%d\n", 132<<20), "\n23\n", "refused memory memory.limit_in_bytes", "refused pids pids.max", "refused memory move", "refused pids move"} {
		if !strings.Contains(out, want) {
			t.Errorf("without namespaces the command's own cgroups: no %q:\n%s", strings.TrimSpace(want), out)
		}
	}
	if strings.Contains(out, "WROTE") || strings.Contains(out, "LEFT") {
		t.Errorf("without namespaces the command wrote a cgroup file:\n%s", out)
	}
	// Positive control: the same user outside the subtree has none.
	cmd := exec.Command(bin, "doctor")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	plain, _ := cmd.CombinedOutput()
	if strings.Contains(string(plain), "memory cgroup     a hard kernel limit per command") {
		t.Errorf("doctor outside the delegated subtree claims a memory cgroup:\n%s", plain)
	}
}

// TestNotDumpableRefused (issue 20 item 6): a command may not make itself
// not dumpable, which would hide its bytes written from the watchdog (its
// /proc files become root's); setting it dumpable again is allowed.
func TestNotDumpableRefused(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	wantDenied(t, "PR_SET_DUMPABLE 0", s.probe(nil, nil, "dumpable", "0"))
	wantAllowed(t, "PR_SET_DUMPABLE 1", s.probe(nil, nil, "dumpable", "1"))
}

// TestNoSetIDFiles: in every mode, a command cannot make a set-user-ID or
// set-group-ID file in a read-write mount (as root, with namespaces, the
// command is uid 0 without capabilities: a setuid-root program on the host;
// as an ordinary user, a program that runs as that user). Positive control:
// other modes are set.
func TestNoSetIDFiles(t *testing.T) {
	requireSandbox(t)
	eachServerMode(t, func(t *testing.T, s *session, m serverMode) {
		dir := t.TempDir()
		for _, d := range []string{filepath.Dir(dir), dir} {
			os.Chmod(d, 0o777)
		}
		mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/w", "mode": "rw"}}
		o, _ := s.exec(map[string]any{"command": bash(`cp /bin/true /mnt/w/t && chmod 755 /mnt/w/t && echo plain ok
chmod 4755 /mnt/w/t; echo u $?; chmod g+s /mnt/w/t; echo g $?
python3 -c 'import os; os.close(os.open("/mnt/w/c", os.O_CREAT|os.O_WRONLY, 0o4755))' 2>/dev/null; echo c $?`), "mounts": mounts})
		if !strings.Contains(o.Stdout, "plain ok") || !strings.Contains(o.Stdout, "u 1") || !strings.Contains(o.Stdout, "g 1") {
			t.Errorf("%+v", o)
		}
		for _, f := range []string{"t", "c"} {
			if st, err := os.Stat(filepath.Join(dir, f)); err == nil && st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("%s is %v on the host", f, st.Mode())
			}
		}
	})
}

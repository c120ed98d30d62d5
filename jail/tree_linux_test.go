package jail

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/jail/wire"
)

// treeScript leaves processes that a naive kill misses: a daemon made with
// setsid and a double fork (its parent subshell exits at once), and a
// background child, all ignoring SIGTERM. It records pids in $1 and either
// waits ("wait") or, once the test has looked at them ($1/go exists), exits 0
// leaving them behind.
const treeScript = `
d=$1
trap '' TERM
echo $$ > "$d/main"
( setsid bash -c 'trap "" TERM; echo $$ > "$0/daemon"; exec sleep 1000' "$d" & )
sleep 1000 & echo $! > "$d/child"
while [ ! -s "$d/daemon" ]; do sleep 0.01; done
echo ready > "$d/ready"
if [ "$2" = wait ]; then wait; fi
while [ ! -e "$d/go" ]; do sleep 0.01; done
`

type treeFixture struct {
	tree *Tree
	dir  string
	pids map[string]int
}

func startTree(t *testing.T, mode string) treeFixture {
	t.Helper()
	return startTreeIn(t, nil, mode)
}

// startTreeIn starts the tree script through pool, or Start if pool is nil.
func startTreeIn(t *testing.T, pool *Pool, mode string) treeFixture {
	t.Helper()
	dir := t.TempDir()
	p := basePolicy(t)
	p.ReadWrite = []string{dir}
	spec := &Spec{Argv: []string{"/bin/bash", "-c", treeScript, "tree", dir, mode}, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: p}
	out := tempFile(t)
	var tree *Tree
	var err error
	if pool != nil {
		tree, err = pool.Start(spec, out, out, 256<<20)
	} else {
		tree, err = Start(testExe(t), spec, out, out)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tree.Kill)
	f := treeFixture{tree: tree, dir: dir, pids: map[string]int{}}
	waitForFile(t, filepath.Join(dir, "ready"))
	for _, name := range []string{"main", "daemon", "child"} {
		// The script sees its namespace's pids; the checks below need ours.
		f.pids[name] = hostPid(t, tree, atoi(t, waitForFile(t, filepath.Join(dir, name))))
	}
	// Positive control: the daemon really left the launcher's session.
	if sid, err := unix.Getsid(f.pids["daemon"]); err != nil || sid == tree.Pid() {
		t.Fatalf("daemon %d: session %d (%v), want its own", f.pids["daemon"], sid, err)
	}
	return f
}

// assertGone checks that no process of the tree survived; zombies count as
// gone (once the launcher is killed, unreaped ones are init's to reap).
func (f treeFixture) assertGone(t *testing.T, names ...string) {
	t.Helper()
	<-f.tree.reaped // Wait and Kill may return while the launcher is still exiting
	for _, name := range names {
		if pid := f.pids[name]; alive(pid) {
			t.Errorf("%s (pid %d) survived", name, pid)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	if alive(f.tree.Pid()) {
		t.Errorf("launcher %d survived", f.tree.Pid())
	}
}

func (f treeFixture) assertAlive(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if !alive(f.pids[name]) {
			t.Fatalf("%s (pid %d) is not running before the kill", name, f.pids[name])
		}
	}
}

func TestTreeKill(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, _ jailMode) { testTreeKill(t) })
}

func testTreeKill(t *testing.T) {
	f := startTree(t, "wait")
	f.assertAlive(t, "main", "daemon", "child")
	f.tree.Kill()
	f.assertGone(t, "main", "daemon", "child")
	res, err := f.tree.Wait()
	if err != nil || !res.Started || res.Signal != "SIGKILL" || res.ExitCode != -1 {
		t.Errorf("Wait = %+v, %v; want started, killed by SIGKILL", res, err)
	}
	f.tree.Kill() // again, after exit: no effect, no hang
}

func TestTreeCleanedAfterNormalExit(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, _ jailMode) { testTreeCleanedAfterNormalExit(t) })
}

func testTreeCleanedAfterNormalExit(t *testing.T) {
	f := startTree(t, "exit")
	f.assertAlive(t, "main", "daemon", "child")
	writeFile(t, filepath.Join(f.dir, "go"), "")
	res, err := f.tree.Wait()
	if err != nil || !res.Started || res.ExitCode != 0 || res.Signal != "" {
		t.Errorf("Wait = %+v, %v; want exit 0", res, err)
	}
	f.assertGone(t, "main", "daemon", "child")
}

// TestTreeKillWedgedLauncher stops the launcher so that it cannot act on the
// kill request: Kill must clean up from the supervisor side.
func TestTreeKillWedgedLauncher(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, _ jailMode) { testTreeKillWedgedLauncher(t) })
}

func testTreeKillWedgedLauncher(t *testing.T) {
	f := startTree(t, "wait")
	f.assertAlive(t, "main", "daemon", "child")
	if err := unix.Kill(f.tree.Pid(), unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	f.tree.Kill()
	f.assertGone(t, "main", "daemon", "child")
	if _, err := f.tree.Wait(); !errors.Is(err, ErrLauncher) {
		t.Errorf("Wait error = %v, want ErrLauncher", err)
	}
}

func TestConcurrentKill(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, _ jailMode) { testConcurrentKill(t) })
}

func testConcurrentKill(t *testing.T) {
	f := startTree(t, "wait")
	done := make(chan struct{})
	for i := 0; i < 3; i++ {
		go func() { f.tree.Kill(); done <- struct{}{} }()
	}
	for i := 0; i < 3; i++ {
		<-done
	}
	f.assertGone(t, "main", "daemon", "child")
}

func TestSpawn(t *testing.T) {
	requireJail(t)
	p := basePolicy(t)
	run := func(spec Spec) (Result, string) {
		t.Helper()
		spec.Sandbox = p
		out := tempFile(t)
		tree, err := Start(testExe(t), &spec, out, out)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tree.Wait()
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		return res, readBack(t, out)
	}
	// A bare name is found in the PATH of the command's environment.
	res, out := run(Spec{Argv: []string{"echo", "hi"}, Env: []string{"PATH=/nonexistent:/usr/bin:/bin"}})
	if !res.Started || res.ExitCode != 0 || out != "hi\n" {
		t.Errorf("echo via PATH: %+v, %q", res, out)
	}
	// Without PATH the default is searched.
	res, out = run(Spec{Argv: []string{"echo", "default"}})
	if !res.Started || out != "default\n" {
		t.Errorf("echo without PATH: %+v, %q", res, out)
	}
	// Relative entries are skipped even where they would match.
	res, _ = run(Spec{Argv: []string{"echo", "hi"}, Env: []string{"PATH=.:bin"}, Dir: "/usr"})
	if res.Started || !strings.Contains(res.SpawnError, "not found") {
		t.Errorf("echo with a relative PATH: %+v, want not found", res)
	}
	res, _ = run(Spec{Argv: []string{"/nonexistent/cmd"}})
	if res.Started || res.SpawnError == "" {
		t.Errorf("missing command: %+v", res)
	}
	res, _ = run(Spec{Argv: []string{"/bin/sh", "-c", "kill -TERM $$"}})
	if res.Signal != "SIGTERM" || res.ExitCode != -1 {
		t.Errorf("self-signalled command: %+v", res)
	}
	// Shell redirection to a device opens it with O_TRUNC.
	res, out = run(Spec{Argv: []string{"/bin/sh", "-c", "echo x > /dev/null && echo redirected"}})
	if res.ExitCode != 0 || out != "redirected\n" {
		t.Errorf("redirect to /dev/null: %+v, %q", res, out)
	}
	res, _ = run(Spec{Argv: []string{"/bin/sh", "-c", "exit 7"}})
	if res.ExitCode != 7 {
		t.Errorf("exit 7: %+v", res)
	}
}

func TestStartRefusesWhatItCannotEnforce(t *testing.T) {
	requireJail(t)
	p := basePolicy(t)
	p.ReadWrite = []string{"/tmp"}
	p.DenyWrite = []string{"/tmp/src"}
	_, err := Start(testExe(t), &Spec{Argv: []string{"/bin/true"}, Sandbox: p}, os.Stdout, os.Stderr)
	if !errors.Is(err, ErrPolicy) {
		t.Errorf("DenyWrite inside ReadWrite: %v, want ErrPolicy", err)
	}
	if _, err := Start(testExe(t), &Spec{}, os.Stdout, os.Stderr); !errors.Is(err, ErrPolicy) {
		t.Errorf("empty argv: %v, want ErrPolicy", err)
	}
}

func TestLauncherErrorMatches(t *testing.T) {
	sb := &launcherError{msg: "jail: applying the sandbox failed: landlock_restrict_self: EPERM", sandbox: true}
	other := &launcherError{msg: "reading spec: EOF"}
	if !errors.Is(sb, ErrLauncher) || !errors.Is(sb, ErrSandbox) || sb.Error() != sb.msg {
		t.Errorf("sandbox failure %q does not match ErrLauncher and ErrSandbox", sb)
	}
	if !errors.Is(other, ErrLauncher) || errors.Is(other, ErrSandbox) || other.Error() != "jail: launcher failed: reading spec: EOF" {
		t.Errorf("launcher failure %q", other)
	}
}

// TestStatusRefusesSpecs: only launchers receive specs; a status frame with one
// is a broken (or forged) launcher, not a report.
func TestStatusRefusesSpecs(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := wire.WriteFrame(w, &wire.Message{Type: wire.MsgExit, Spec: &Spec{Argv: []string{"x"}}}); err != nil {
		t.Fatal(err)
	}
	tree := &Tree{finished: make(chan struct{}), reaped: make(chan struct{})}
	rep := tree.readStatus(r)
	if rep.final || rep.failure == nil || !strings.Contains(rep.failure.Error(), "carries a spec") {
		t.Errorf("report %+v, want a failure naming the spec", rep)
	}
}

// TestLauncherSurvivesItsCommand: a command that tries to kill or stop its
// launcher, by every way of sending a signal, does not get rid of it: without
// namespaces Landlock's scoping refuses each signal (no thread of the launcher
// is in the command's domain once the thread that forked it has exited, and
// the seccomp filter refuses the thread-directed calls that name the
// launcher's process until then: "ghost" names a thread that is not the
// launcher's, which the kernel would answer ESRCH, as it does when the same
// call names the command's own process, "ghost-control"); as the init of a
// pid namespace, the launcher has signals sent from inside dropped. Either way the call ends as the
// command does, and a daemon it left is killed.
func TestLauncherSurvivesItsCommand(t *testing.T) {
	if st := requireJail(t); !st.Scoped() {
		t.Skipf("Landlock ABI %d < %d: without scoping a command may signal its launcher (SECURITY.md)", st.LandlockABI, confine.ABIScope)
	}
	eachMode(t, func(t *testing.T, m jailMode) {
		attacks := []string{"kill9", "stop", "killpg", "pidfd", "tgkill", "ghost", "ghost-control"}
		if m.ns {
			// Only where the namespace bounds it: without scoping, from root,
			// kill(-1) would reach every process of the machine.
			attacks = append(attacks, "killall")
		}
		var probes []string
		for _, a := range attacks {
			probes = append(probes, "attack-launcher:"+a)
		}
		p := basePolicy(t)
		p.ReadOnly = append(p.ReadOnly, "/proc")
		got, res, tree := startHelper(t, Spec{Sandbox: p}, probes...)
		if !res.Started || res.ExitCode != 0 {
			t.Fatalf("victim ended %+v", res)
		}
		for _, p := range probes {
			// Landlock refuses (EPERM). Where it would not (ABI < 6, skipped
			// here), the kernel would drop what reaches a namespace's init.
			// In a namespace killpg names the launcher's group, 1: kill(-1),
			// which finds no other process to signal (ESRCH).
			want := "EPERM"
			if m.ns && (p == "attack-launcher:killall" || p == "attack-launcher:killpg") || p == "attack-launcher:ghost-control" {
				want = "ESRCH"
			}
			if got[p] != want {
				t.Errorf("%s = %s, want %s", p, got[p], want)
			}
		}
		if tree.root != m.ns || tree.pidns != m.ns {
			t.Errorf("private root %v, pid namespace %v; want %v", tree.root, tree.pidns, m.ns)
		}
		if !m.ns {
			return
		}
		// The namespace alone, without Landlock: an unsafe command (root, all
		// capabilities) sends the signals, and the kernel drops each one that
		// reaches the namespace's init, so the launcher still reports.
		got, res, _ = startHelper(t, Spec{Unsafe: true}, "attack-launcher:kill9", "attack-launcher:stop", "attack-launcher:pidfd")
		if !res.Started || res.ExitCode != 0 {
			t.Fatalf("unsafe victim ended %+v", res)
		}
		expect(t, "unsafe", got, map[string]string{"attack-launcher:kill9": "ok", "attack-launcher:stop": "ok", "attack-launcher:pidfd": "ok"})
	})
}

// TestLauncherKilledFromOutside: when the launcher dies without a word (SIGKILL
// from outside, the OOM killer), nothing of its tree lives on, not even a
// daemon that left its session and was orphaned to init: in a pid namespace
// the kernel kills them with the launcher; without one, the supervisor kills
// every process in the launcher's cgroup (a pooled launcher has one where
// this process can make cgroups).
func TestLauncherKilledFromOutside(t *testing.T) {
	requireJail(t)
	eachMode(t, func(t *testing.T, m jailMode) {
		if !m.ns && probeCgroups() == nil {
			t.Skip("no cgroups here and no pid namespace: a daemon orphaned to init escapes the sweep (SECURITY.md)")
		}
		pool := NewPool(testExe(t), 1, nil)
		defer pool.Close()
		f := startTreeIn(t, pool, "wait")
		f.assertAlive(t, "main", "daemon", "child")
		if err := unix.Kill(f.tree.Pid(), unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, err := f.tree.Wait()
		if !errors.Is(err, ErrLauncher) {
			t.Errorf("Wait error = %v, want ErrLauncher", err)
		}
		f.assertGone(t, "main", "daemon", "child")
	})
}

package jail

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/internal/pace"
	"github.com/autobox-dev/autobox/jail/internal/confine"
	"github.com/autobox-dev/autobox/policy"
)

func TestPool(t *testing.T) {
	requireJail(t)
	pool := NewPool(testExe(t), 2, nil)
	p := basePolicy(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var used []*Tree
	track := func(t *Tree) { mu.Lock(); used = append(used, t); mu.Unlock() }
	outs := make([]string, 6)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := tempFile(t)
			tree, err := pool.Start(&Spec{Argv: []string{"/bin/echo", fmt.Sprint(i)}, Sandbox: p}, out, out, 0)
			if err != nil {
				t.Error(err)
				return
			}
			track(tree)
			if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
				t.Errorf("%d: %+v, %v", i, res, err)
			}
			outs[i] = readBack(t, out)
		}()
	}
	wg.Wait()
	for i, out := range outs {
		if out != fmt.Sprintf("%d\n", i) {
			t.Errorf("command %d wrote %q", i, out)
		}
	}

	// An idle launcher that died is replaced transparently.
	idle := <-pool.ready
	pool.ready <- idle
	if err := unix.Kill(idle.Pid(), unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-idle.reaped
	out := tempFile(t)
	for i := 0; i < 3; i++ { // whichever launcher it gets, the command runs
		tree, err := pool.Start(&Spec{Argv: []string{"/bin/echo", "again"}, Sandbox: p}, out, out, 0)
		if err != nil {
			t.Fatalf("Start after an idle launcher died: %v", err)
		}
		track(tree)
		if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
			t.Errorf("%+v, %v", res, err)
		}
	}
	if got := readBack(t, out); got != strings.Repeat("again\n", 3) {
		t.Errorf("output %q", got)
	}

	// A negative memory limit is refused (0, no limit, is what the calls above
	// used); an unsafe spec runs, as the pool does not prepare (a preparing pool
	// refuses it: TestPoolPrepared).
	if _, err := pool.Start(&Spec{Argv: []string{"/bin/true"}, Sandbox: p}, out, out, -5); !errors.Is(err, ErrPolicy) {
		t.Errorf("memory limit -5: %v, want ErrPolicy", err)
	}
	tree, err := pool.Start(&Spec{Argv: []string{"/bin/echo", "unsafe"}, Unsafe: true}, out, out, 0)
	if err != nil {
		t.Fatalf("unsafe spec through a pool that does not prepare: %v", err)
	}
	track(tree)
	if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("unsafe: %+v, %v", res, err)
	}

	for _, tree := range used {
		<-tree.reaped
	}
	pool.Close()
	idlePids := 0
	for _, c := range childrenOf(unix.Getpid()) {
		if !c.Dead() && c.PPid == unix.Getpid() {
			if b, err := readCmdline(c.Pid); err == nil && strings.Contains(b, "worker\x00exec") {
				idlePids++
			}
		}
	}
	if idlePids != 0 {
		t.Errorf("%d idle launchers left after Close", idlePids)
	}
	// Start after Close still works, without the pool.
	tree, err = pool.Start(&Spec{Argv: []string{"/bin/true"}, Sandbox: p}, out, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("after Close: %+v, %v", res, err)
	}
}

// TestPoolPrepared: launchers that prepared for a base policy give a spec that
// extends it the prepared ruleset plus its own rules; a spec that does not extend
// it (it lacks one of the base's paths, or has other rights), or one whose base
// paths now name other files, gets a ruleset of its own. Either way the command
// gets exactly its spec's access.
func TestPoolPrepared(t *testing.T) {
	requireJail(t)
	eachMode(t, testPoolPrepared)
}

func testPoolPrepared(t *testing.T, m jailMode) {
	a, b, rw := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		writeFile(t, filepath.Join(d, "data"), "x")
	}
	base := basePolicy(t)
	base.ReadOnly = append(base.ReadOnly, a, b)
	pool := NewPool(testExe(t), 1, &base)
	defer pool.Close()
	run := func(what string, p policy.Sandbox, wantPrepared bool, want map[string]string) {
		t.Helper()
		probes := slices.Sorted(maps.Keys(want))
		spec := Spec{Sandbox: p, Argv: append([]string{testExe(t)}, probes...), Env: []string{helperEnv + "=1"}}
		out := tempFile(t)
		tree, err := pool.Start(&spec, out, out, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tree.Wait()
		text := readBack(t, out)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: victim: %+v, %v, output:\n%s", what, res, err, text)
		}
		if tree.prepared != wantPrepared {
			t.Errorf("%s: command got the prepared ruleset: %v, want %v", what, tree.prepared, wantPrepared)
		}
		<-tree.reaped
		expect(t, what, parseResults(t, text, probes), want)
	}
	readA, readB := "read:"+filepath.Join(a, "data"), "read:"+filepath.Join(b, "data")
	n := 0
	create := func() string { n++; return fmt.Sprintf("create:%s/%d", rw, n) }

	extends := base
	extends.ReadOnly = slices.Clone(base.ReadOnly)
	extends.ReadWrite = []string{rw}
	c := create()
	run("extends the base", extends, true, map[string]string{readA: "ok", readB: "ok", c: "ok"})

	narrower := basePolicy(t)
	narrower.ReadOnly = append(narrower.ReadOnly, a)
	narrower.ReadWrite = []string{rw}
	c = create()
	run("lacks a path of the base", narrower, false, map[string]string{readA: "ok", readB: "EACCES", c: "ok"})

	noDevices := extends
	noDevices.Devices = nil
	c = create()
	run("lacks the base's devices", noDevices, false, map[string]string{readA: "ok", readB: "ok", c: "ok", "write:/dev/null": "EACCES"})

	// Before Landlock ABI 4 there are no network rights: the attributes are the
	// same and the prepared ruleset is right for it. With namespaces a command
	// without network has loopback alone, and no TCP rules either; in a user
	// namespace the whole network takes a launcher that was not prepared.
	network := extends
	network.AllowNetwork = true
	c = create()
	run("other network rights", network, (Probe().LandlockABI < confine.ABINet || m.ns) && m.name != "user-namespaces", map[string]string{readA: "ok", readB: "ok", c: "ok"})

	// Wait until the idle launcher has prepared (its prepared frame), then
	// move b away and put a new directory in its place: the prepared rule
	// holds the old directory.
	waitPrepared(t, pool)
	moved := b + ".moved"
	if err := os.Rename(b, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b, "data"), "new")
	readMoved := "read:" + filepath.Join(moved, "data")
	movedWant := "EACCES"
	if m.ns {
		// The prepared root held the old directory too: it is built again.
		movedWant = "ENOENT"
	}
	c = create()
	run("a base path replaced", extends, false, map[string]string{readA: "ok", readB: "ok", "readfile:" + filepath.Join(b, "data"): "new", readMoved: movedWant, c: "ok"})

	// An unsafe spec keeps root's capabilities, which a prepared launcher has
	// given up: a pool that prepares refuses it.
	if _, err := pool.Start(&Spec{Argv: []string{"/bin/true"}, Unsafe: true}, tempFile(t), tempFile(t), 0); !errors.Is(err, ErrPolicy) {
		t.Errorf("unsafe spec through a preparing pool: %v, want ErrPolicy", err)
	}
}

// TestPoolRefills: after calls spaced out (whose replacements wait a little) and
// calls back to back (whose replacements start at once), the pool is full again.
func TestPoolRefills(t *testing.T) {
	requireJail(t)
	pool := NewPool(testExe(t), 2, nil)
	defer pool.Close()
	full := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(pool.ready) < cap(pool.ready); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d launchers ready after 10 s", what, len(pool.ready), cap(pool.ready))
			}
		}
	}
	run := func() {
		out := tempFile(t)
		tree, err := pool.Start(&Spec{Argv: []string{"/bin/true"}, Sandbox: basePolicy(t)}, out, out, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	full("new pool")
	for i := 0; i < 3; i++ {
		time.Sleep(pace.BurstGap)
		run()
		full("after a spaced call")
	}
	for i := 0; i < 5; i++ {
		run()
	}
	full("after calls back to back")
}

// waitPrepared waits until an idle launcher of pool reported it finished
// preparing for the pool's base, and leaves it parked. A launcher is taken
// out to be waited on; if the pool's background refill parked another one
// meanwhile, that one is waited on instead. The bound only keeps a broken
// launcher from hanging the suite.
func waitPrepared(t *testing.T, pool *Pool) {
	t.Helper()
	bound := time.After(time.Minute)
	for {
		var tree *Tree
		select {
		case tree = <-pool.ready:
		case <-bound:
			t.Fatal("no idle launcher in a minute")
		}
		select {
		case <-tree.preparedCh:
		case <-tree.finished:
			release(tree)
			t.Fatal("the idle launcher ended before it prepared")
		case <-bound:
			release(tree)
			t.Fatal("the idle launcher did not report prepared in a minute")
		}
		select {
		case pool.ready <- tree:
			return
		default:
			release(tree)
		}
	}
}

package jail

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

	for _, tree := range used {
		<-tree.reaped
	}
	pool.Close()
	idlePids := 0
	for _, c := range childrenOf(unix.Getpid()) {
		if !c.dead() && c.ppid == unix.Getpid() {
			if b, err := readCmdline(c.pid); err == nil && strings.Contains(b, "worker\x00exec") {
				idlePids++
			}
		}
	}
	if idlePids != 0 {
		t.Errorf("%d idle launchers left after Close", idlePids)
	}
	// Start after Close still works, without the pool.
	tree, err := pool.Start(&Spec{Argv: []string{"/bin/true"}, Sandbox: p}, out, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := tree.Wait(); err != nil || res.ExitCode != 0 {
		t.Errorf("after Close: %+v, %v", res, err)
	}
}

// TestPoolPrepared: launchers that prepared for a base policy give a spec that
// extends it the prepared ruleset plus its own rules, and a spec that does not
// extend it (it lacks one of the base's paths, or has other network rights) a
// ruleset of its own: the prepared one, which allows more, is not used.
func TestPoolPrepared(t *testing.T) {
	requireJail(t)
	a, b, rw := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		writeFile(t, filepath.Join(d, "data"), "x")
	}
	base := basePolicy(t)
	base.ReadOnly = append(base.ReadOnly, a, b)
	pool := NewPool(testExe(t), 1, &base)
	defer pool.Close()
	run := func(p policy.Sandbox, wantPrepared bool, probes ...string) map[string]string {
		t.Helper()
		spec := Spec{Sandbox: p, Argv: append([]string{testExe(t)}, probes...), Env: []string{helperEnv + "=1"}}
		out := tempFile(t)
		tree, err := pool.Start(&spec, out, out, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tree.Wait()
		text := readBack(t, out)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("victim: %+v, %v, output:\n%s", res, err, text)
		}
		if tree.prepared != wantPrepared {
			t.Errorf("command got the prepared ruleset: %v, want %v", tree.prepared, wantPrepared)
		}
		<-tree.reaped
		return parseResults(t, text, probes)
	}
	readA, readB := "read:"+filepath.Join(a, "data"), "read:"+filepath.Join(b, "data")

	extends := base
	extends.ReadOnly = slices.Clone(base.ReadOnly)
	extends.ReadWrite = []string{rw}
	create := "create:" + filepath.Join(rw, "one")
	expect(t, "extends the base", run(extends, true, readA, readB, create),
		map[string]string{readA: "ok", readB: "ok", create: "ok"})

	narrower := basePolicy(t)
	narrower.ReadOnly = append(narrower.ReadOnly, a)
	narrower.ReadWrite = []string{rw}
	create = "create:" + filepath.Join(rw, "two")
	expect(t, "lacks a path of the base", run(narrower, false, readA, readB, create),
		map[string]string{readA: "ok", readB: "EACCES", create: "ok"})

	network := extends
	network.AllowNetwork = true
	create = "create:" + filepath.Join(rw, "three")
	expect(t, "other network rights", run(network, false, readA, readB, create),
		map[string]string{readA: "ok", readB: "ok", create: "ok"})
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
		time.Sleep(burstGap)
		run()
		full("after a spaced call")
	}
	for i := 0; i < 5; i++ {
		run()
	}
	full("after calls back to back")
}

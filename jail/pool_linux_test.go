package jail

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPool(t *testing.T) {
	requireJail(t)
	pool := NewPool(testExe(t), 2)
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

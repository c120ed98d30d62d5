package jail

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPoolOfNone: a pool of size 0 (a command line's one command) starts no
// launcher ahead of a call nor after it: each Start spawns the launcher of its
// command, prepared for the pool's base, and when the commands are done this
// process has no launcher left. The positive control, a pool of size 1, keeps
// one waiting.
func TestPoolOfNone(t *testing.T) {
	requireJail(t)
	base := basePolicy(t)
	none := NewPool(testExe(t), 0, &base)
	time.Sleep(100 * time.Millisecond)
	if n := launcherChildren(t); n != 0 {
		t.Errorf("a pool of none started %d launchers before its first call", n)
	}
	for i := range 3 {
		out := tempFile(t)
		tree, err := none.Start(&Spec{Argv: []string{"/bin/echo", fmt.Sprint(i)}, Sandbox: base}, out, out, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := tree.Wait(); err != nil || res.ExitCode != 0 || readBack(t, out) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("command %d: %+v, %v", i, res, err)
		}
		if !tree.prepared {
			t.Errorf("command %d: its launcher was not prepared for the pool's base", i)
		}
		<-tree.reaped
		time.Sleep(50 * time.Millisecond) // a refill would have started by now
		if n := launcherChildren(t); n != 0 || len(none.ready) != 0 {
			t.Errorf("after command %d: %d launchers running, %d ready (want none)", i, n, len(none.ready))
		}
	}
	none.Close()

	one := NewPool(testExe(t), 1, &base)
	defer one.Close()
	if n := waitLaunchers(t, 1); n != 1 {
		t.Errorf("a pool of one has %d launchers waiting, want 1", n)
	}
}

// launcherChildren counts this process's children that are launchers.
func launcherChildren(t *testing.T) int {
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, pid := range strings.Fields(string(b)) {
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			if strings.Contains(string(cmd), "worker\x00") {
				n++
			}
		}
	}
	return n
}

package jail

import (
	"fmt"
	"testing"
	"time"
)

// TestPoolOfOne: a pool of one (`autobox exec`'s) starts its command's
// launcher before any Start; the first Start takes that launcher, later ones
// spawn their own, and none is started after a command. A pool of one closed
// unused leaves no launcher behind.
func TestPoolOfOne(t *testing.T) {
	requireJail(t)
	base := basePolicy(t)
	one := NewPoolOfOne(testExe(t))
	defer one.Close()
	select {
	case <-one.ahead:
	case <-time.After(30 * time.Second):
		t.Fatal("the launcher started ahead was not ready after 30 s")
	}
	if len(one.ready) != 1 {
		t.Fatalf("before the first call: %d launchers ready, want the one started ahead", len(one.ready))
	}
	// Forked, it may still be on its way to the launcher's exec (through
	// the user-namespace helper, say) on a loaded machine.
	if n := waitLaunchers(t, 1); n != 1 {
		t.Fatalf("before the first call: %d launchers running, want the one started ahead", n)
	}
	ahead := <-one.ready
	one.ready <- ahead
	for i := range 3 {
		out := tempFile(t)
		tree, err := one.Start(&Spec{Argv: []string{"/bin/echo", fmt.Sprint(i)}, Sandbox: base}, out, out, 0)
		if err != nil {
			t.Fatal(err)
		}
		if (tree == ahead) != (i == 0) {
			t.Errorf("command %d: ran under the launcher started ahead: %v (want it for the first command alone)", i, tree == ahead)
		}
		if res, err := tree.Wait(); err != nil || res.ExitCode != 0 || readBack(t, out) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("command %d: %+v, %v", i, res, err)
		}
		<-tree.reaped
		time.Sleep(50 * time.Millisecond) // a refill would have started by now
		if n := launcherChildren(t); n != 0 || len(one.ready) != 0 {
			t.Errorf("after command %d: %d launchers running, %d ready (want none)", i, n, len(one.ready))
		}
	}

	unused := NewPoolOfOne(testExe(t))
	<-unused.ahead
	if n := waitLaunchers(t, 1); n != 1 {
		t.Errorf("a second pool of one: %d launchers running, want its own", n)
	}
	unused.Close()
	if n := launcherChildren(t); n != 0 {
		t.Errorf("a pool of one closed unused left %d launchers running", n)
	}
}

// waitLaunchers waits up to 20 s for this process to have want launchers, and
// returns the last count.
func waitLaunchers(t *testing.T, want int) int {
	t.Helper()
	n := -1
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if n = launcherChildren(t); n == want {
			break
		}
	}
	return n
}

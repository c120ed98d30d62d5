package jail

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAwaitExit: awaitExit returns once a child has exited, and leaves it
// unreaped (its waiter reaps it, and until then its pid is not reused); a
// child that already exited and one already reaped return at once.
func TestAwaitExit(t *testing.T) {
	if _, err := unix.PidfdOpen(1, 0); err != nil {
		t.Logf("no pidfd here (%v): the blocking waitid is what runs", err)
	}
	for _, argv := range [][]string{{"sleep", "0.3"}, {"true"}} {
		c := exec.Command(argv[0], argv[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		pid := c.Process.Pid
		awaitExit(pid)
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err != nil || got != pid || !ws.Exited() {
			t.Errorf("%v: after awaitExit, wait4(WNOHANG) = %d, %v (%v): want the exited child, unreaped until then", argv, got, err, ws)
		}
		awaitExit(pid) // reaped: nothing to wait for
	}
}

package jail

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// TestStaleOwner: a cgroup is stale only when its maker was of this pid
// namespace (or named none, as an older autobox) and is gone.
func TestStaleOwner(t *testing.T) {
	ns := pidNamespace()
	if ns == 0 {
		t.Skip("/proc/self/ns/pid does not say this process's pid namespace")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := gone.Process.Pid, os.Getpid()
	for _, c := range []struct {
		name  string
		stale bool
	}{
		{cgroupPrefix(dead) + "u", true},                      // the positive control
		{cgroupPrefix(live) + "u", false},                     // its maker runs
		{fmt.Sprintf("autobox-p%d-n%d-u", dead, ns+1), false}, // another namespace's pid
		{fmt.Sprintf("autobox-p%d-n0-u", dead), false},        // a namespace nobody knew
		{fmt.Sprintf("autobox-p%d-1f2e3d4c-u", dead), true},   // an older autobox's name
		{fmt.Sprintf("autobox-p%d-1f2e3d4c-u", live), false},
		{"autobox-probe-12", false},
		{"autobox-px-n1-u", false},
	} {
		if got := staleOwner(c.name); got != c.stale {
			t.Errorf("staleOwner(%q) = %v, want %v", c.name, got, c.stale)
		}
	}
}

package jail

import (
	"errors"
	"testing"

	"github.com/autobox-dev/autobox/policy"
)

// TestRefuseKernelFSWrites: read-write paths on the kernel's pseudo-filesystems,
// or holding one, are refused; ordinary directories are not.
func TestRefuseKernelFSWrites(t *testing.T) {
	for _, p := range []string{"/proc/sys", "/proc", "/sys", "/sys/fs/cgroup", "/dev/pts", "/"} {
		if err := refuseKernelFSWrites(&policy.Sandbox{ReadWrite: []string{t.TempDir(), p}}); !errors.Is(err, ErrPolicy) {
			t.Errorf("read-write %s: %v, want refused", p, err)
		}
	}
	if err := refuseKernelFSWrites(&policy.Sandbox{ReadWrite: []string{t.TempDir()}, ReadOnly: []string{"/proc", "/sys"}}); err != nil {
		t.Errorf("an ordinary directory, and the kernel's read-only: %v", err)
	}
}

package confine

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/autobox-dev/autobox/policy"
)

func TestProbeMatchesKernel(t *testing.T) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	want := int(v)
	if e != 0 {
		want = 0
	}
	st := Probe()
	if st.LandlockABI != want {
		t.Errorf("Probe LandlockABI = %d, kernel says %d (errno %v)", st.LandlockABI, want, e)
	}
	t.Logf("%s", st)
}

func TestLandlockPlan(t *testing.T) {
	p := &policy.Sandbox{ReadOnly: []string{"/ro"}, ReadWrite: []string{"/rw"}, Devices: []string{"/dev/null"}}
	for _, tc := range []struct {
		abi              int
		net              bool
		wantNet, wantScp uint64
		wantSize         uintptr
	}{
		{abi: 3, wantSize: 8},
		{abi: 4, wantNet: unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, wantSize: 16},
		{abi: 4, net: true, wantSize: 16},
		{abi: 6, net: true, wantScp: unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, wantSize: 24},
		{abi: 7, wantNet: unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, wantScp: unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET, wantSize: 24},
	} {
		p.AllowNetwork = tc.net
		attr, size, rules := landlockPlan(p, tc.abi, false)
		if attr.Handled_access_net != tc.wantNet || attr.Scoped != tc.wantScp || size != tc.wantSize {
			t.Errorf("abi %d net %v: net %#x scoped %#x size %d, want %#x %#x %d", tc.abi, tc.net, attr.Handled_access_net, attr.Scoped, size, tc.wantNet, tc.wantScp, tc.wantSize)
		}
		if attr.Handled_access_fs&unix.LANDLOCK_ACCESS_FS_TRUNCATE == 0 {
			t.Errorf("abi %d: truncate not handled", tc.abi)
		}
		if got := attr.Handled_access_fs&unix.LANDLOCK_ACCESS_FS_IOCTL_DEV != 0; got != (tc.abi >= 5) {
			t.Errorf("abi %d: ioctl_dev handled = %v", tc.abi, got)
		}
		for _, r := range rules {
			if r.access&^attr.Handled_access_fs != 0 {
				t.Errorf("abi %d: rule %s grants unhandled rights %#x", tc.abi, r.path, r.access&^attr.Handled_access_fs)
			}
			if r.access&unix.LANDLOCK_ACCESS_FS_EXECUTE != 0 {
				t.Errorf("abi %d: rule %s grants execute without AllowExec", tc.abi, r.path)
			}
		}
	}
}

package supervisor

import (
	"runtime"
	"slices"
	"testing"

	"github.com/autobox-dev/autobox/internal/syspaths"
	"github.com/autobox-dev/autobox/policy"
)

// TestCommandPolicyExtendsBase: a command's sandbox is the base every tree
// gets (syspaths.Base, which a task's harness extends too: task's
// TestNativePolicyExtendsBase) plus its scratch dir, mounts and, on Linux, its
// own cgroups (syspaths.CgroupTree); the host's
// resolver files only with allowNetwork (allowHosts gets a resolver of its
// own, no network needs none).
func TestCommandPolicyExtendsBase(t *testing.T) {
	sys := syspaths.SystemPaths()
	if len(sys.Network) == 0 {
		t.Fatal("no resolver file on this host: the resolver's case checks nothing")
	}
	hosts, err := policy.ParseAllowHosts("allowHosts", []string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	scratch, mount := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		name     string
		net      netChoice
		resolver bool
	}{
		{"allowNetwork", netChoice{open: true}, true},
		{"none", netChoice{}, false},
		{"allowHosts", netChoice{hosts: hosts}, false},
	} {
		sb := commandPolicy([]policy.Mount{{Host: mount}}, scratch, c.net)
		if m := syspaths.Missing(&sb); len(m) > 0 {
			t.Errorf("%s: the command's sandbox lacks the base's %q", c.name, m)
		}
		if !sb.NoFollow || !slices.Contains(sb.ReadWrite, scratch) || !slices.Contains(sb.ReadOnly, mount) {
			t.Errorf("%s: NoFollow, the scratch dir or the mount missing: %+v", c.name, sb)
		}
		// Its own cgroups, on Linux: where runtimes find its limits.
		if slices.Contains(sb.ReadOnly, syspaths.CgroupTree) != (runtime.GOOS == "linux") {
			t.Errorf("%s: %s in the command's sandbox: %v, want it on Linux alone", c.name, syspaths.CgroupTree, !(runtime.GOOS == "linux"))
		}
		for _, p := range sys.Network {
			if slices.Contains(sb.ReadOnly, p) != c.resolver {
				t.Errorf("%s: resolver file %s in the command's sandbox: %v, want %v", c.name, p, !c.resolver, c.resolver)
			}
		}
	}
	// Each call's slices are its own: a mount of one is not in the next.
	if sb := commandPolicy(nil, scratch, netChoice{}); slices.Contains(sb.ReadOnly, mount) {
		t.Error("a mount of an earlier call is in a later call's sandbox")
	}
}

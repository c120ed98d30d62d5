package task

import (
	"context"
	"slices"
	"testing"

	"github.com/autobox-dev/autobox/internal/syspaths"
)

// TestNativePolicyExtendsBase: a harness's sandbox is the base every tree gets
// (syspaths.Base, which a server's command extends too: supervisor's
// TestCommandPolicyExtendsBase) plus its own paths and the cgroup tree; the
// host's resolver files only on the host's network (a private network gets
// its own from the jail, no network needs none).
func TestNativePolicyExtendsBase(t *testing.T) {
	root, tasks := newRepo(t), tasksDir(t)
	sys := syspaths.SystemPaths()
	if len(sys.Network) == 0 {
		t.Fatal("no resolver file on this host: the resolver's case checks nothing")
	}
	for _, c := range []struct {
		name     string
		o        NativeOptions
		resolver bool
	}{
		{"host-network", NativeOptions{}, true},
		{"no-network", NativeOptions{NoNetwork: true}, false},
		{"allow-host", NativeOptions{AllowHosts: []string{"example.com"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNative(t, root, tasks, &c.o)
			rec, err := n.ensure(context.Background(), c.name)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := n.sandboxPolicy(rec)
			if err != nil {
				t.Fatal(err)
			}
			if m := syspaths.Missing(sb); len(m) > 0 {
				t.Errorf("the harness's sandbox lacks the base's %q", m)
			}
			for _, p := range append([]string{rec.Path, root}, harnessReadOnly...) {
				if !slices.Contains(sb.ReadOnly, p) && !slices.Contains(sb.ReadWrite, p) {
					t.Errorf("the harness's sandbox lacks its own %s", p)
				}
			}
			for _, p := range sys.Network {
				if slices.Contains(sb.ReadOnly, p) != c.resolver {
					t.Errorf("resolver file %s in the harness's sandbox: %v, want %v", p, !c.resolver, c.resolver)
				}
			}
			if sb.NoFollow {
				t.Error("NoFollow on a harness whose own paths are the host's names")
			}
		})
	}
}

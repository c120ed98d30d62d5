package jail

import (
	"os"
	"testing"
)

// TestCapabilitiesDropped: a command started by a root supervisor, or by an
// ordinary user's user-namespace launcher (which holds capabilities in its own
// namespace), holds no capability in any set and cannot regain them (locked
// securebits); the unsafe run, the positive control, keeps the launcher's.
func TestCapabilitiesDropped(t *testing.T) {
	requireJail(t)
	if os.Geteuid() != 0 && launcherMode() != nsUser {
		t.Skip("needs root or user namespaces: the capabilities to drop are theirs")
	}
	probes := []string{"info:caps"}
	p := basePolicy(t)
	p.ReadOnly = append(p.ReadOnly, "/proc")
	got, _, _ := startHelper(t, Spec{Sandbox: p}, probes...)
	expect(t, "sandboxed", got, map[string]string{"info:caps": "CapInh:0000000000000000 CapPrm:0000000000000000 CapEff:0000000000000000 CapBnd:0000000000000000 CapAmb:0000000000000000"})
	got, _, _ = startHelper(t, Spec{Unsafe: true}, probes...)
	if got["info:caps"] == "" || got["info:caps"] == "CapInh:0000000000000000 CapPrm:0000000000000000 CapEff:0000000000000000 CapBnd:0000000000000000 CapAmb:0000000000000000" {
		t.Errorf("unsafe run (positive control) has no capabilities: %q", got["info:caps"])
	}
}

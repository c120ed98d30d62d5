package jail

import (
	"os"
	"testing"
)

// TestCapabilitiesDropped: a command started by a root supervisor holds no capability
// in any set and cannot regain them (locked securebits); the unsafe run, the positive
// control, keeps root's capabilities.
func TestCapabilitiesDropped(t *testing.T) {
	requireJail(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the capabilities to drop are root's")
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

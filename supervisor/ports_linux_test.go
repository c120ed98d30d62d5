package supervisor

import (
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestReservedPortsAreJails: the ports a session entry may not take are those
// the launcher keeps for itself inside a command's network.
func TestReservedPortsAreJails(t *testing.T) {
	for _, p := range []int{jail.ProxyPort, jail.RedirectPort, 53} {
		if reservedPort(p) == "" {
			t.Errorf("port %d is the sandbox's own, but a session entry may take it", p)
		}
	}
	if reservedPort(3000) != "" {
		t.Error("port 3000 refused")
	}
}

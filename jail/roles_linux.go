package jail

import "github.com/autobox-dev/autobox/jail/wire"

// ChildRoles maps each of jail's child roles (wire.RoleExec and its kin,
// which this side starts) to its body, which returns the process's
// exit code. Only jail/launcher reads it.
var ChildRoles = map[string]func(args []string) int{
	wire.RoleExec:             func([]string) int { return launch() },
	wire.RoleUserNSProbe:      func([]string) int { return probeInside() },
	wire.RoleTransparentProbe: func([]string) int { return probeTransparentInside() },
}

package launcher

import "github.com/autobox-dev/autobox/jail/wire"

// childRoles are the roles of this package's own: the launcher (wire.RoleExec,
// launch) and the probes the server runs in a child (wire.RoleUserNSProbe,
// wire.RoleTransparentProbe), each returning the process's exit code.
func childRoles() map[string]Role {
	return map[string]Role{
		wire.RoleExec:             func([]string) int { return launch() },
		wire.RoleUserNSProbe:      func([]string) int { return probeInside() },
		wire.RoleTransparentProbe: func([]string) int { return probeTransparentInside() },
	}
}

package jail

// The roles of `autobox worker ROLE` that run jail's child side, which this
// side starts (os.Executable with "worker" and the role's name). The table
// that dispatches them is jail/launcher's (launcher.Main), which holds these.
const (
	roleExec             = "exec"              // a launcher: runs one command tree (launch)
	roleUserNSProbe      = "userns-probe"      // what a launcher makes in a user namespace (probeInside)
	roleTransparentProbe = "transparent-probe" // the transparent path in a network namespace (probeTransparentInside)
)

// ChildRoles maps each role above to its body, which returns the process's
// exit code. Only jail/launcher reads it.
var ChildRoles = map[string]func(args []string) int{
	roleExec:             func([]string) int { return launch() },
	roleUserNSProbe:      func([]string) int { return probeInside() },
	roleTransparentProbe: func([]string) int { return probeTransparentInside() },
}

package supervisor

import "github.com/autobox-dev/autobox/policy"

// MountReport is one mount as a call used it: the host directory that was
// mounted (canonical: a host path through a symbolic link is refused, see
// policy/links.go), so that what a caller approved can be checked against
// what ran.
type MountReport struct {
	SandboxPath string `json:"sandboxPath" jsonschema:"where the call saw it"`
	HostPath    string `json:"hostPath" jsonschema:"the host directory mounted, resolved (for a workspace: its working tree)"`
	Mode        string `json:"mode" jsonschema:"ro or rw"`
	WorkspaceID string `json:"workspaceId,omitempty" jsonschema:"the workspace, for a {workspaceId} mount"`
}

// reportMounts is the mounts field of a result; nil without mounts.
func reportMounts(ms []policy.Mount) []MountReport {
	var out []MountReport
	for _, m := range ms {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		out = append(out, MountReport{SandboxPath: m.Sandbox, HostPath: m.Host, Mode: mode, WorkspaceID: m.WorkspaceID})
	}
	return out
}

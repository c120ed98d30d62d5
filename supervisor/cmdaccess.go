package supervisor

import (
	"fmt"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// checkCommandAccess refuses a call whose mounts the commands' uid cannot use.
// A root server without namespaces runs commands as an unprivileged uid
// (jail.CommandCredential), never as root: a mount below a directory only
// root may search (root's home, 0700), or one that uid may not write, would
// otherwise fail inside the command with "permission denied" at its first
// exec or write, and a workspace would show "no changes" after it. The error
// names the mount, the directory that stops the uid and what to do.
func checkCommandAccess(mounts []policy.Mount) error {
	for i, m := range mounts {
		err := jail.CommandAccess(m.Host, m.Writable)
		if err == nil {
			continue
		}
		uid, _, _ := jail.CommandCredential()
		fix := fmt.Sprintf("give uid %d access to it", uid)
		if m.WorkspaceID != "" {
			fix = "a workspace's copy belongs to this server's uid (root) and is private to it"
		}
		return fmt.Errorf("%w: mounts[%d] (%s): %w. Commands run as uid %d here, never as root, because this server is root without namespaces: %s; or run autobox as an ordinary user (in a container: docker run --user), or give it namespaces, where commands keep its uid (autobox doctor says how)",
			ErrSandboxUnavailable, i, m.Sandbox, err, uid, fix)
	}
	return nil
}

package supervisor

import (
	"fmt"
	"os"

	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
	"github.com/autobox-dev/autobox/store"
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
			fix = fmt.Sprintf("workspaces this server makes are given to uid %d, but this one's storage is out of its reach (a storagePath below a directory it may not search, or a workspace made before); make workspaces in the default storage (%s) or a storagePath it can reach", uid, dropStorage)
		}
		return fmt.Errorf("%w: mounts[%d] (%s): %w. Commands run as uid %d here, never as root, because this server is root without namespaces: %s; or run autobox as an ordinary user (in a container: docker run --user), or give it namespaces, where commands keep its uid (autobox doctor says how)",
			ErrSandboxUnavailable, i, m.Sandbox, err, uid, fix)
	}
	return nil
}

// dropStorage is the default workspace storage of a root server whose commands run as
// another uid, unless XDG_DATA_HOME names one: root's own default, below /root (0700),
// is out of their reach.
const dropStorage = "/var/lib/autobox-workspaces"

// storeOptions are the workspace store's options: where commands run as another uid,
// working trees are given to it (store/owner.go), in storage it can reach.
func storeOptions(stateDir string) store.Options {
	o := store.Options{StateDir: stateDir}
	if uid, gid, drop := jail.CommandCredential(); drop {
		o.WorkOwner = &store.Owner{UID: uid, GID: gid}
		if os.Getenv("XDG_DATA_HOME") == "" {
			o.DefaultStorage = dropStorage
		}
	}
	return o
}

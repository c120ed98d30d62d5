package supervisor

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/autobox-dev/autobox/cmdrun"
	"github.com/autobox-dev/autobox/jail"
	"github.com/autobox-dev/autobox/policy"
)

// Where a command sees its mounts (policy.Place): where launchers give it a
// root of its own (a private root), each mount is bound at its sandboxPath
// and the command runs with the call's paths as written; elsewhere
// (landlock-only, macOS) the mounts are at their host paths and sandbox
// paths in command, cwd and env are rewritten to them. The result's
// mountPaths says which.

// Values of ExecOutput.MountPaths.
const (
	mountsBound     = "bound at sandboxPath"
	mountsRewritten = "rewritten to hostPath"
)

// placesMounts reports whether this call's mounts are to be bound at their
// sandboxPath: launchers build a private root here, and no mount is of the
// host's "/" (whose bind would bring the host's /proc along: it stays at its
// host path, and so do the call's other mounts, for one rule per call).
func (s *Server) placesMounts(mounts []policy.Mount) bool {
	if runtime.GOOS != "linux" || s.opts.Unsafe || !jail.Isolations().PrivateRoot || len(mounts) == 0 {
		return false
	}
	for _, m := range mounts {
		if m.Host == "/" {
			return false
		}
	}
	return true
}

// placeMounts refuses a call whose sandboxPath would hide, or be hidden by, a
// path every command's root has (system directories, /tmp, /proc, /dev, the
// scratch dir, caches), in every mode, so that a call means the same
// everywhere; with place it adds the mounts' places to sb.
func placeMounts(sb *policy.Sandbox, mounts []policy.Mount, place bool) error {
	var places []policy.Place
	for _, m := range mounts {
		places = append(places, policy.Place{Host: m.Host, At: m.Sandbox})
	}
	probe := *sb
	probe.Places = places
	for i, m := range mounts {
		if m.Host == "/" {
			continue // never placed (placesMounts)
		}
		if c := policy.PlaceConflict(&probe, m.Sandbox, m.Host); c != "" {
			return fmt.Errorf("%w: mounts[%d]: sandboxPath %s overlaps %s, which every command sees; choose a path of its own, e.g. /mnt/%s", policy.ErrInvalid, i, m.Sandbox, c, filepath.Base(m.Sandbox))
		}
	}
	if place {
		sb.Places = places
	}
	return nil
}

// sandboxCwd is the sandbox path of a cwd resolved to host directory real,
// inside one of mounts.
func sandboxCwd(mounts []policy.Mount, real string) string {
	for _, m := range mounts {
		if policy.Within(real, m.Host) {
			rel, err := filepath.Rel(m.Host, real)
			if err != nil || rel == "." {
				return m.Sandbox
			}
			return filepath.Join(m.Sandbox, rel)
		}
	}
	return real
}

// mountPaths is the result's mountPaths: "" without mounts.
func mountPaths(c *execCall, t cmdrun.Tree) string {
	if len(c.mounts) == 0 {
		return ""
	}
	if c.placing && cmdrun.PrivateRoot(t) {
		return mountsBound
	}
	return mountsRewritten
}

package policy

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrInvalid marks a call's arguments as invalid: the caller's mistake, reported as a
// tool error naming the problem.
var ErrInvalid = errors.New("invalid argument")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// MountSpec is one entry of a call's `mounts` list as the caller wrote it: either a
// host directory ({hostPath, sandboxPath, mode}) or a workspace reference ({workspaceId}).
type MountSpec struct {
	HostPath    string `json:"hostPath,omitempty" jsonschema:"absolute host directory to mount"`
	SandboxPath string `json:"sandboxPath,omitempty" jsonschema:"absolute path the sandbox sees, e.g. /mnt/data"`
	Mode        string `json:"mode,omitempty" jsonschema:"ro (default) or rw"`
	WorkspaceID string `json:"workspaceId,omitempty" jsonschema:"a workspace id from copy_then_sync create, mounted read-write at its sandboxPath"`
}

// Mount is a validated mount: canonical host directory, clean sandbox path.
type Mount struct {
	Host        string // absolute, canonical (symlinks resolved) host directory
	Sandbox     string // absolute, clean sandbox path, never "/"
	Writable    bool
	WorkspaceID string // set for {workspaceId} mounts
	Source      string // workspace mounts: the workspace's host source, kept unwritable
}

// Workspace is what a workspace reference resolves to.
type Workspace struct {
	Work        string // the writable working tree
	SandboxPath string
	Source      string
}

// WorkspaceLookup resolves a workspace id; nil means workspaces are unavailable.
type WorkspaceLookup func(id string) (*Workspace, error)

// MaxMounts bounds the mount list of one call.
const MaxMounts = 32

// ResolveMounts validates a call's mount list and makes every host path absolute and
// canonical once. managed lists directories autobox owns (workspace storage, records):
// raw host mounts may not overlap them; workspaces are mounted by id instead.
func ResolveMounts(specs []MountSpec, lookup WorkspaceLookup, managed []string) ([]Mount, error) {
	if len(specs) > MaxMounts {
		return nil, invalid("mounts: %d entries, at most %d allowed", len(specs), MaxMounts)
	}
	mounts := make([]Mount, 0, len(specs))
	for i, s := range specs {
		m, err := resolveOne(s, lookup, managed)
		if err != nil {
			return nil, fmt.Errorf("mounts[%d]: %w", i, err)
		}
		mounts = append(mounts, m)
	}
	if err := checkOverlaps(mounts); err != nil {
		return nil, err
	}
	sort.Slice(mounts, func(i, j int) bool { return mounts[i].Sandbox < mounts[j].Sandbox })
	return mounts, nil
}

func resolveOne(s MountSpec, lookup WorkspaceLookup, managed []string) (Mount, error) {
	if s.WorkspaceID != "" {
		if s.HostPath != "" || s.SandboxPath != "" || s.Mode != "" {
			return Mount{}, invalid("a {workspaceId} mount takes no hostPath, sandboxPath or mode")
		}
		if lookup == nil {
			return Mount{}, invalid("workspace mounts are not available")
		}
		ws, err := lookup(s.WorkspaceID)
		if err != nil {
			return Mount{}, err
		}
		sb, err := CleanSandboxPath(ws.SandboxPath)
		if err != nil {
			return Mount{}, err
		}
		return Mount{Host: ws.Work, Sandbox: sb, Writable: true, WorkspaceID: s.WorkspaceID, Source: ws.Source}, nil
	}
	if s.HostPath == "" {
		return Mount{}, invalid("hostPath is required (or give a workspaceId)")
	}
	if s.SandboxPath == "" {
		return Mount{}, invalid("sandboxPath is required")
	}
	writable := false
	switch s.Mode {
	case "", "ro":
	case "rw":
		writable = true
	default:
		return Mount{}, invalid("mode %q is not \"ro\" or \"rw\"", s.Mode)
	}
	host, err := CanonicalDir(s.HostPath)
	if err != nil {
		return Mount{}, fmt.Errorf("hostPath: %w", err)
	}
	if err := NotCanonical("hostPath", s.HostPath, host); err != nil {
		return Mount{}, err
	}
	// Nothing may be mounted from inside autobox's own storage, and nothing that
	// holds it may be mounted writable (a call could then rewrite workspace records or
	// baselines behind sync's back). A read-only mount of, say, the home directory that
	// holds the storage is fine.
	for _, m := range managed {
		if m != "" && (Within(host, m) || (writable && Within(m, host))) {
			return Mount{}, invalid("hostPath %s overlaps autobox management storage %s; mount workspaces with {workspaceId} instead", host, m)
		}
	}
	sb, err := CleanSandboxPath(s.SandboxPath)
	if err != nil {
		return Mount{}, err
	}
	return Mount{Host: host, Sandbox: sb, Writable: writable}, nil
}

// CanonicalDir makes p absolute and canonical and checks it is an existing directory.
func CanonicalDir(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", invalid("path contains a NUL byte")
	}
	if !filepath.IsAbs(p) {
		return "", invalid("%q is not an absolute path", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", invalid("%s does not exist", p)
		}
		return "", invalid("%s: %v", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", invalid("%s: %v", p, err)
	}
	if !fi.IsDir() {
		return "", invalid("%s is not a directory", p)
	}
	return real, nil
}

// CleanSandboxPath validates a sandbox path: absolute, no "..", not "/".
func CleanSandboxPath(p string) (string, error) {
	if strings.ContainsRune(p, 0) {
		return "", invalid("sandboxPath contains a NUL byte")
	}
	if !strings.HasPrefix(p, "/") {
		return "", invalid("sandboxPath %q is not absolute", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", invalid("sandboxPath %q contains \"..\"", p)
		}
	}
	c := path.Clean(p)
	if c == "/" {
		return "", invalid("sandboxPath cannot be /")
	}
	if len(c) > MaxSandboxPath {
		return "", invalid("sandboxPath is %d bytes, at most %d", len(c), MaxSandboxPath)
	}
	for _, part := range strings.Split(c[1:], "/") {
		if len(part) > 255 {
			return "", invalid("sandboxPath has a component of %d bytes, at most 255", len(part))
		}
	}
	return c, nil
}

// checkOverlaps rejects duplicate or nested sandbox paths, and host layouts that an
// allowlist sandbox cannot enforce: a read-only mount (or a mounted workspace's source)
// inside a writable one would be writable through the outer mount.
func checkOverlaps(ms []Mount) error {
	for i := range ms {
		for j := range ms {
			if i == j {
				continue
			}
			a, b := ms[i], ms[j]
			if i < j && (Within(a.Sandbox, b.Sandbox) || Within(b.Sandbox, a.Sandbox)) {
				if a.Sandbox == b.Sandbox {
					return invalid("mounts: sandboxPath %s is used twice", a.Sandbox)
				}
				return invalid("mounts: sandbox paths %s and %s are nested", a.Sandbox, b.Sandbox)
			}
			if a.Writable && !b.Writable && Within(b.Host, a.Host) {
				return invalid("mounts: read-only %s lies inside read-write %s, so it could not stay read-only", b.Host, a.Host)
			}
			if a.Writable && b.Source != "" && (Within(b.Source, a.Host) || Within(a.Host, b.Source)) {
				return invalid("mounts: read-write %s overlaps %s, the source of workspace %s; edit through the workspace mount", a.Host, b.Source, b.WorkspaceID)
			}
		}
	}
	return nil
}

// Within reports whether p is base or lies below it, comparing whole components.
func Within(p, base string) bool {
	if p == base {
		return true
	}
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, base+"/")
}

// Resolve maps an absolute sandbox path to the mount that holds it and the path
// relative to that mount's root ("." for the root itself).
func Resolve(mounts []Mount, sandboxPath string) (*Mount, string, error) {
	if sandboxPath == "" {
		return nil, "", invalid("path is empty")
	}
	if strings.ContainsRune(sandboxPath, 0) {
		return nil, "", invalid("path contains a NUL byte")
	}
	if !strings.HasPrefix(sandboxPath, "/") {
		return nil, "", invalid("path %q is not an absolute sandbox path", sandboxPath)
	}
	for _, c := range strings.Split(sandboxPath, "/") {
		if c == ".." {
			return nil, "", invalid("path %q contains \"..\"", sandboxPath)
		}
	}
	p := path.Clean(sandboxPath)
	for i := range mounts {
		m := &mounts[i]
		if Within(p, m.Sandbox) {
			rel := strings.TrimPrefix(strings.TrimPrefix(p, m.Sandbox), "/")
			if rel == "" {
				rel = "."
			}
			return m, rel, nil
		}
	}
	return nil, "", invalid("path %s is outside the declared mounts", p)
}

// Package ceiling is the user's ceiling on what calls may ask for: which host paths
// may be mounted and how, which are never mountable, which hosts allowHosts may
// name, whether allowNetwork is allowed, and upper limits of time, memory,
// processes and bytes written. Calls carry their own permissions (the seed's
// model); the ceiling bounds them, and only the user sets it: in a file
// ($XDG_CONFIG_HOME/autobox/policy.json) and with flags of `autobox serve`. A
// call never sets or widens it; a widening the user grants comes through MCP
// elicitation (package supervisor) and is kept here as Grants (this server's
// life) or written to the file (Update).
//
// Without a file every rule is open, as before the ceiling existed, except the
// never-mountable defaults: the user's secrets directories (~/.ssh, ~/.gnupg,
// ~/.aws, ~/.config/gcloud) and autobox's own state and config directories,
// resolved from the real user's home directory (the password database, not
// $HOME, which a client may set to anything).
//
// Host paths are compared canonically: a call's host paths are already
// canonical (policy.NotCanonical refuses others), and the ceiling's own paths are
// resolved when it is loaded.
package ceiling

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/autobox-dev/autobox/policy"
)

// ErrBeyond marks a call refused because it asks for more than the ceiling.
var ErrBeyond = errors.New("beyond the user's ceiling")

// Mode is how a path may be mounted.
type Mode int

const (
	ReadOnly  Mode = 1
	ReadWrite Mode = 2
)

func (m Mode) String() string {
	if m == ReadWrite {
		return "rw"
	}
	return "ro"
}

// MountRule lets calls mount Path, or anything below it, up to Mode.
type MountRule struct {
	Path string // canonical (or clean, when it does not exist)
	Mode Mode
}

// Never is a path no call may mount. A secret (the user's secrets
// directories and the user's own neverMount entries) may not be mounted, nor may
// any directory that holds it, in any mode; autobox's own directories (Own) may
// not be mounted, and a directory holding them not read-write (so that no call
// rewrites its records or its own ceiling).
type Never struct {
	Path    string // canonical (or clean, when it does not exist)
	Written string // as the user (or the default list) wrote it, e.g. ~/.ssh
	Own     bool
	Default bool
	// Link is, for a symbolic link on the way to an own path (Written), its
	// text: the link is never mountable, lest a call replace it.
	Link string
}

// Limits are upper limits; 0 means no ceiling.
type Limits struct {
	TimeoutMs    int `json:"timeoutMs,omitempty"`
	MemoryMb     int `json:"memoryMb,omitempty"`
	MaxProcesses int `json:"maxProcesses,omitempty"`
	MaxWriteMb   int `json:"maxWriteMb,omitempty"`
}

// Ceiling is the ceiling in force. Nil fields and zero limits are open.
type Ceiling struct {
	Mounts       []MountRule // nil: any path (but Never)
	Never        []Never
	AllowHosts   *policy.AllowHosts // nil: any host
	hostEntries  []string
	AllowNetwork *bool // nil: allowed
	Limits       Limits
	reach        []string // alwaysReach (reach.go)

	// File is the ceiling file's path, FileExists whether it exists.
	File       string
	FileExists bool
	// Sources says where each rule came from, by rule name (mounts, neverMount,
	// allowHosts, allowNetwork, limits.timeoutMs, …): "file PATH" or "flag --x".
	Sources map[string]string
}

// HostEntries are the allowHosts entries of the ceiling, as written.
func (c *Ceiling) HostEntries() []string { return c.hostEntries }

// NetworkAllowed reports whether calls may open the whole network.
func (c *Ceiling) NetworkAllowed() bool { return c.AllowNetwork == nil || *c.AllowNetwork }

// DefaultFile is where the ceiling file is looked for: $XDG_CONFIG_HOME/autobox/
// policy.json, or ~/.config/autobox/policy.json.
func DefaultFile() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "autobox", "policy.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = RealHome()
	}
	return filepath.Join(home, ".config", "autobox", "policy.json")
}

// RealHome is the home directory of the user the process runs as, from the
// password database; $HOME only where that has none.
func RealHome() string {
	if u, err := user.LookupId(strconv.Itoa(os.Getuid())); err == nil && filepath.IsAbs(u.HomeDir) {
		return filepath.Clean(u.HomeDir)
	}
	home, _ := os.UserHomeDir()
	return home
}

// SecretDefaults are the never-mountable defaults of the user's secrets, as
// written in the README and in liftNeverMount.
var SecretDefaults = []string{"~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud"}

// ownDefaults are autobox's own directories under the real home.
func ownDefaults() []string {
	if runtime.GOOS == "darwin" {
		return []string{"~/Library/Application Support/autobox", "~/.config/autobox"}
	}
	return []string{"~/.local/state/autobox", "~/.config/autobox"}
}

// expand resolves a leading ~/ against the real home and makes p canonical as far
// as it exists.
func expand(p string) (string, error) {
	l, ok := lexical(p)
	if !ok {
		return "", fmt.Errorf("%q is not an absolute path (or ~/…)", p)
	}
	return canonicalMaybeMissing(l), nil
}

// canonicalMaybeMissing is policy.CanonicalMaybeMissing.
func canonicalMaybeMissing(p string) string { return policy.CanonicalMaybeMissing(p) }

// Canonical is canonicalMaybeMissing, for callers that check a path that may not
// exist yet (a workspace's storagePath).
func Canonical(p string) string { return canonicalMaybeMissing(filepath.Clean(p)) }

// addDefaults puts the never-mountable defaults in c, less those lifted; own
// lists autobox's directories in force (state dir, config dir) besides those
// under the real home.
func (c *Ceiling) addDefaults(lifted map[string]bool, own []string) {
	for _, w := range SecretDefaults {
		if lifted[w] || lifted["*"] {
			continue
		}
		if p, err := expand(w); err == nil {
			c.Never = append(c.Never, Never{Path: p, Written: w, Default: true})
		}
	}
	// Autobox's own, and every path on the way to each (ownpaths.go).
	seen := map[string]int{} // path → index in c.Never
	for _, w := range append(ownDefaults(), own...) {
		l, ok := lexical(w)
		if !ok {
			continue
		}
		for _, st := range append(wayTo(l), wayStep{Path: canonicalMaybeMissing(l)}) {
			if i, dup := seen[st.Path]; dup {
				if st.Link != "" && c.Never[i].Link == "" { // say it is a link
					c.Never[i].Link, c.Never[i].Written = st.Link, w
				}
				continue
			}
			seen[st.Path] = len(c.Never)
			c.Never = append(c.Never, Never{Path: st.Path, Written: w, Own: true, Default: true, Link: st.Link})
		}
	}
}

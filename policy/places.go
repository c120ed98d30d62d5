package policy

import "strings"

// Places: where an enforcer builds the command's filesystem from the allowed
// paths alone (the Linux private root), a call's mounts are bound at the
// sandboxPath the caller named rather than at their host path, and the
// command runs with the paths the caller wrote: pwd, tracebacks and the files
// it writes name each file one way, the caller's. Where there is no such root
// (Landlock alone, macOS seatbelt) the caller's paths are rewritten to host
// paths instead (RewriteArg, RewriteCommand).

// Place is one mount bound at its own path: Host, which is also one entry of
// ReadOnly or ReadWrite (each Place accounts for one occurrence there), is
// bound at At.
type Place struct {
	Host string
	At   string
}

// MaxSandboxPath bounds a sandboxPath, in bytes; a component has at most 255.
const MaxSandboxPath = 1024

// rootNames are paths a private root has of its own: a place may not be, hold
// or lie in one. The jail's own names start with "/.autobox".
var rootNames = []string{"/proc", "/dev", "/tmp", "/run", "/etc", "/sys"}

// PlaceConflict returns the path of sb that a mount bound at at would hide or
// be hidden by (at is, holds or lies in it), or "" if none. host is the
// mount's own host path, which is not a conflict. Paths of sb that are other
// places' hosts are not where anything is bound; their At is checked instead.
func PlaceConflict(sb *Sandbox, at, host string) string {
	switch {
	case at == "/":
		return at
	case strings.HasPrefix(at, "/.autobox"):
		return "/.autobox* (the sandbox's own names)"
	}
	placedHost := map[string]int{}
	for _, p := range sb.Places {
		if p.At != at {
			placedHost[p.Host]++
			if overlaps(at, p.At) {
				return p.At
			}
		}
	}
	check := func(list []string) string {
		for _, q := range list {
			if q == host {
				continue
			}
			if placedHost[q] > 0 {
				continue
			}
			if overlaps(at, q) {
				return q
			}
		}
		return ""
	}
	for _, l := range [][]string{rootNames, sb.ReadOnly, sb.ReadWrite, sb.Devices, sb.Links} {
		if c := check(l); c != "" {
			return c
		}
	}
	return ""
}

func overlaps(a, b string) bool { return Within(a, b) || Within(b, a) }

// RewriteCommand is c made for an enforcer that binds no Places: the places'
// paths in its arguments, working directory and environment values replaced
// by their host paths (see RewriteArg), and Places dropped.
func RewriteCommand(c *Command) {
	if len(c.Sandbox.Places) == 0 {
		return
	}
	ms := make([]Mount, len(c.Sandbox.Places))
	for i, p := range c.Sandbox.Places {
		ms[i] = Mount{Host: p.Host, Sandbox: p.At}
	}
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = RewriteArg(ms, a)
	}
	c.Argv = argv
	if m, rel, err := Resolve(ms, c.Dir); c.Dir != "" && err == nil {
		c.Dir = m.Host
		if rel != "." {
			c.Dir += "/" + rel
		}
	}
	env := make([]string, len(c.Env))
	for i, kv := range c.Env {
		env[i] = RewriteArg(ms, kv)
	}
	c.Env = env
	c.Sandbox.Places = nil
}

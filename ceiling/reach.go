package ceiling

import "github.com/autobox-dev/autobox/policy"

// Hosts the user lets commands reach without their calls listing them. A
// command whose call has allowHosts (its network goes through autobox's proxy)
// and connects to a host:port its list does not allow may have the user asked,
// mid-command (package supervisor); "session" remembers the answer for this
// server's life (Grants), "always" writes it to the file's alwaysReach. The
// proxy lets every later command with allowHosts reach these as if its call
// had listed them: the user allowed them, not the model. A call without
// allowHosts (no network, or allowNetwork) is not affected.

// ReachEntries are the allowHosts entries every proxied command may reach: the
// file's alwaysReach and this server's session answers (g, may be nil).
func (c *Ceiling) ReachEntries(g *Grants) []string {
	out := append([]string{}, c.reach...)
	if g != nil {
		g.mu.Lock()
		out = append(out, g.reach...)
		g.mu.Unlock()
	}
	return out
}

// Reaches reports whether host:port is among ReachEntries.
func (c *Ceiling) Reaches(g *Grants, host string, port uint16) bool {
	entries := c.ReachEntries(g)
	if len(entries) == 0 {
		return false
	}
	a, err := policy.ParseAllowHosts("alwaysReach", entries)
	if err != nil {
		return false
	}
	return a.AllowsTarget(host, port)
}

// Reach remembers entry for this server's life (a "session" answer).
func (g *Grants) Reach(entry string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reach = append(g.reach, entry)
}

// EditReach adds entry to the file's alwaysReach (an "always" answer).
func EditReach(f *File, entry string) {
	for _, e := range f.AlwaysReach {
		if e == entry {
			return
		}
	}
	f.AlwaysReach = append(f.AlwaysReach, entry)
}

package ceiling

import (
	"fmt"
	"strings"
	"sync"

	"github.com/autobox-dev/autobox/internal/flaghint"
	"github.com/autobox-dev/autobox/policy"
)

// Request is what one call asks for, in the terms the ceiling bounds.
type Request struct {
	Mounts       []MountAsk
	AllowNetwork bool
	AllowHosts   []string // the call's entries, already valid
	Limits       Limits   // the values the call asked for; 0 where the tool has no such limit
}

// MountAsk is one host path a call would have autobox reach.
type MountAsk struct {
	Param string // the call's parameter, e.g. mounts[1].hostPath, storagePath
	Path  string // canonical
	Mode  Mode
	// Storage marks where autobox itself writes (a workspace's storagePath):
	// only a path inside a secret is refused, for nothing mounts the storage
	// directory itself, and the store keeps it off its own directories.
	Storage bool
}

// Excess is one way a call goes beyond the ceiling.
type Excess struct {
	Rule    string // neverMount, mounts, allowHosts, allowNetwork, limits.timeoutMs, …
	Param   string // the call's parameter
	Want    string // what the call wants, in the user's words: "mount /p read-write"
	Askable bool   // the user may be asked (never-mountable paths are not)
	msg     string // why it is refused, with where the user changes the rule
	grant   func(*Grants)
	edit    func(*File)
}

// Error is the refusal's text.
func (e Excess) Error() string { return e.msg }

// Grants are widenings the user granted for this server's life. Safe for
// concurrent use.
type Grants struct {
	mu      sync.Mutex
	mounts  []MountRule
	hosts   []string
	network bool
	limits  Limits
	reach   []string // reach.go
}

// Apply remembers what granting es gives.
func (g *Grants) Apply(es []Excess) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range es {
		if e.grant != nil {
			e.grant(g)
		}
	}
}

// Edit applies the widenings of es to a ceiling file's rules ("always").
func Edit(f *File, es []Excess) {
	for _, e := range es {
		if e.edit != nil {
			e.edit(f)
		}
	}
}

// where says where the user changes rule: the flag, or the file.
func (c *Ceiling) where(rule string) string {
	s := c.Sources[rule]
	if strings.HasPrefix(s, "flag ") {
		return "the " + strings.TrimPrefix(s, "flag ") + " flag of autobox serve"
	}
	return c.File
}

// FromFlag reports whether rule was set by a flag (which "always" cannot change).
func (c *Ceiling) FromFlag(rule string) bool { return strings.HasPrefix(c.Sources[rule], "flag ") }

// Limit is the ceiling of one limit with this server's grants (0: none).
func (c *Ceiling) Limit(name string, g *Grants) int {
	v := *c.limitField(&c.Limits, name)
	if g != nil {
		g.mu.Lock()
		if gv := *c.limitField(&g.limits, name); gv > v && v > 0 {
			v = gv
		}
		g.mu.Unlock()
	}
	return v
}

func (c *Ceiling) limitField(l *Limits, name string) *int {
	switch name {
	case "timeoutMs":
		return &l.TimeoutMs
	case "memoryMb":
		return &l.MemoryMb
	case "maxProcesses":
		return &l.MaxProcesses
	}
	return &l.MaxWriteMb
}

// Check lists how r goes beyond the ceiling with the grants g (nil: none);
// empty when r is within it.
func (c *Ceiling) Check(r Request, g *Grants) []Excess {
	var out []Excess
	for _, m := range r.Mounts {
		if e, ok := c.checkNever(m); ok {
			out = append(out, e)
			continue
		}
		if e, ok := c.checkMount(m, g); ok {
			out = append(out, e)
		}
	}
	if r.AllowNetwork && !c.NetworkAllowed() && !g.hasNetwork() {
		rule := "allowNetwork"
		out = append(out, Excess{Rule: rule, Param: "allowNetwork", Askable: true,
			Want: "reach the whole network (allowNetwork)",
			msg: fmt.Sprintf("allowNetwork: beyond your ceiling: its \"allowNetwork\" rule (%s) keeps calls off the whole network; name the hosts the call needs in allowHosts%s, or the user allows it there",
				c.where(rule), c.hostsHint()),
			grant: func(g *Grants) { g.network = true },
			edit:  func(f *File) { t := true; f.AllowNetwork = &t },
		})
	}
	if c.AllowHosts != nil && len(r.AllowHosts) > 0 {
		within := c.grantedHosts(g)
		for i, entry := range r.AllowHosts {
			one, err := policy.ParseAllowHosts("allowHosts", []string{entry})
			if err != nil {
				continue // validated by the caller
			}
			if ok, _ := one.Within(within); ok {
				continue
			}
			entry := entry
			out = append(out, Excess{Rule: "allowHosts", Param: fmt.Sprintf("allowHosts[%d]", i), Askable: true,
				Want: "reach " + describeHost(entry),
				msg: fmt.Sprintf("allowHosts[%d] %q: beyond your ceiling: its \"allowHosts\" rule (%s) lets calls reach only %s; the user adds %q there to allow it",
					i, entry, c.where("allowHosts"), listOr(c.hostEntries, "no host"), entry),
				grant: func(g *Grants) { g.hosts = append(g.hosts, entry) },
				edit: func(f *File) {
					if f.AllowHosts == nil {
						f.AllowHosts = &[]string{}
					}
					*f.AllowHosts = append(*f.AllowHosts, entry)
				},
			})
		}
	}
	for _, l := range []struct {
		name, unit string
		v          int
	}{
		{"timeoutMs", "ms", r.Limits.TimeoutMs}, {"memoryMb", "MB", r.Limits.MemoryMb},
		{"maxProcesses", "", r.Limits.MaxProcesses}, {"maxWriteMb", "MB", r.Limits.MaxWriteMb},
	} {
		max := c.Limit(l.name, g)
		if max == 0 || l.v <= max {
			continue
		}
		l := l
		rule := "limits." + l.name
		out = append(out, Excess{Rule: rule, Param: l.name, Askable: true,
			Want: fmt.Sprintf("%s %d%s (your ceiling: %d%s)", l.name, l.v, l.unit, max, l.unit),
			msg: fmt.Sprintf("%s %d: beyond your ceiling: its %q rule (%s) is %d; ask for at most that, or the user raises it there",
				l.name, l.v, rule, c.where(rule), max),
			grant: func(g *Grants) {
				if p := c.limitField(&g.limits, l.name); *p < l.v {
					*p = l.v
				}
			},
			edit: func(f *File) {
				if f.Limits == nil {
					f.Limits = &Limits{}
				}
				*c.limitField(f.Limits, l.name) = l.v
			},
		})
	}
	return out
}

// checkNever refuses a mount of a never-mountable path, below one, or of a
// directory holding one (holding an own directory: read-write only).
func (c *Ceiling) checkNever(m MountAsk) (Excess, bool) {
	for _, n := range c.Never {
		below := policy.Within(m.Path, n.Path)
		holds := policy.Within(n.Path, m.Path) && (!n.Own || m.Mode == ReadWrite)
		if m.Storage && (n.Own || !below) {
			continue
		}
		if !below && !holds {
			continue
		}
		how := "is"
		if !below {
			how = "holds"
			if n.Own {
				how = "read-write, holds"
			}
		} else if m.Path != n.Path {
			how = "lies inside"
		}
		var fix string
		switch {
		case n.Own:
			fix = "autobox's own directories cannot be mounted by path, so that no call can rewrite its records or its own ceiling"
		case n.Default:
			fix = fmt.Sprintf("the user lifts this default by adding %q to liftNeverMount in %s (or starts %s %s)", n.Written, c.File, flaghint.Serve(flaghint.LiftNeverMount), n.Written)
		default:
			fix = "the user removes it from \"neverMount\" in " + c.where("neverMount")
		}
		what := n.Path
		if n.Link != "" {
			what = fmt.Sprintf("%s (a link to %s, on the way to %s)", n.Path, n.Link, n.Written)
		}
		return Excess{Rule: "neverMount", Param: m.Param, Want: "mount " + m.Path,
			msg: fmt.Sprintf("%s %s %s %s, which no call may mount (your ceiling's \"neverMount\" rule); %s", m.Param, m.Path, how, what, fix)}, true
	}
	return Excess{}, false
}

// checkMount holds a mount to the mounts rule and the grants.
func (c *Ceiling) checkMount(m MountAsk, g *Grants) (Excess, bool) {
	if c.Mounts == nil {
		return Excess{}, false
	}
	rules := c.Mounts
	if g != nil {
		g.mu.Lock()
		rules = append(append([]MountRule{}, rules...), g.mounts...)
		g.mu.Unlock()
	}
	for _, r := range rules {
		if policy.Within(m.Path, r.Path) && r.Mode >= m.Mode {
			return Excess{}, false
		}
	}
	var list []string
	for _, r := range c.Mounts {
		list = append(list, r.Path+" "+r.Mode.String())
	}
	how := "read-only"
	if m.Mode == ReadWrite {
		how = "read-write"
	}
	rule := MountRule{Path: m.Path, Mode: m.Mode}
	return Excess{Rule: "mounts", Param: m.Param, Askable: true, Want: "mount " + m.Path + " " + how,
		msg: fmt.Sprintf("%s %s (%s): beyond your ceiling: its \"mounts\" rule (%s) lets calls mount only %s; the user adds {\"path\": %q, \"mode\": %q} there to allow it",
			m.Param, m.Path, m.Mode, c.where("mounts"), listOr(list, "no path"), m.Path, m.Mode.String()),
		grant: func(g *Grants) { g.mounts = append(g.mounts, rule) },
		edit: func(f *File) {
			if f.Mounts == nil {
				f.Mounts = &[]MountEntry{}
			}
			for i, e := range *f.Mounts {
				if p, err := expand(e.Path); err == nil && p == rule.Path {
					(*f.Mounts)[i].Mode = rule.Mode.String()
					return
				}
			}
			*f.Mounts = append(*f.Mounts, MountEntry{Path: rule.Path, Mode: rule.Mode.String()})
		},
	}, true
}

func (g *Grants) hasNetwork() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.network
}

// grantedHosts is the ceiling's host list with the hosts granted.
func (c *Ceiling) grantedHosts(g *Grants) policy.AllowHosts {
	entries := c.hostEntries
	if g != nil {
		g.mu.Lock()
		entries = append(append([]string{}, entries...), g.hosts...)
		g.mu.Unlock()
	}
	a, _ := policy.ParseAllowHosts("allowHosts", entries)
	return a
}

func (c *Ceiling) hostsHint() string {
	if c.AllowHosts == nil {
		return ""
	}
	return " (your ceiling allows " + listOr(c.hostEntries, "no host") + ")"
}

// describeHost says what an allowHosts entry reaches, for a question.
func describeHost(entry string) string {
	if strings.HasPrefix(entry, "*.") {
		return "any subdomain of " + strings.TrimPrefix(entry, "*.") + " (ports 80 and 443)"
	}
	if hasPort(entry) {
		return entry
	}
	return entry + " (ports 80 and 443)"
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ", ")
}

// hasPort reports whether an allowHosts entry names its port (host:port,
// [v6]:port, range:port).
func hasPort(entry string) bool {
	i := strings.LastIndex(entry, ":")
	if i < 0 || i == len(entry)-1 || strings.Trim(entry[i+1:], "0123456789") != "" {
		return false
	}
	return strings.HasPrefix(entry, "[") || strings.Count(entry, ":") == 1
}

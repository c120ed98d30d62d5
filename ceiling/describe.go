package ceiling

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/autobox-dev/autobox/policy"
)

// Describe prints the ceiling in force, one rule a line, with where each came
// from (the file, a flag, the defaults, or nowhere: an open rule).
func (c *Ceiling) Describe(w io.Writer) {
	state := "absent: only the never-mountable defaults apply, unless flags say more"
	if c.FileExists {
		state = "present"
		if fi, err := os.Stat(c.File); err == nil {
			state += ", changed " + fi.ModTime().UTC().Format("2006-01-02 15:04:05 UTC")
		}
		state += "; a running autobox serve reads it again within a second of a change"
	}
	fmt.Fprintf(w, "ceiling file: %s (%s)\n", c.File, state)
	from := func(rule string) string {
		if s := c.Sources[rule]; s != "" {
			return s
		}
		return "no rule: open"
	}
	line := func(rule, value, source string) {
		fmt.Fprintf(w, "  %-20s %-44s %s\n", rule, value, source)
	}
	if c.Mounts == nil {
		line("mounts", "any host path (but neverMount)", from("mounts"))
	} else if len(c.Mounts) == 0 {
		line("mounts", "no host path", from("mounts"))
	}
	for _, m := range c.Mounts {
		line("mounts", m.Path+" "+m.Mode.String(), from("mounts"))
	}
	for _, n := range c.Never {
		v := n.Path
		switch {
		case n.Link != "":
			v = n.Path + " -> " + n.Link + " (a link on the way to " + n.Written + ")"
		case n.Written != n.Path:
			v = n.Written + " (" + n.Path + ")"
		}
		src := from("neverMount")
		switch {
		case n.Own:
			src = "default: autobox's own (a read-only mount of a directory holding it is allowed)"
		case n.Default:
			src = "default: liftNeverMount [\"" + n.Written + "\"] lifts it"
		}
		line("neverMount", v, src)
	}
	if lifted := c.Sources["liftNeverMount"]; lifted != "" {
		line("liftNeverMount", "(some defaults lifted)", lifted)
	}
	switch {
	case c.AllowHosts == nil:
		line("allowHosts", "any host", from("allowHosts"))
	case len(c.hostEntries) == 0:
		line("allowHosts", "no host", from("allowHosts"))
	default:
		line("allowHosts", strings.Join(c.hostEntries, ", "), from("allowHosts"))
	}
	if c.NetworkAllowed() {
		line("allowNetwork", "allowed", from("allowNetwork"))
	} else {
		line("allowNetwork", "refused", from("allowNetwork"))
	}
	if len(c.reach) > 0 {
		line("alwaysReach", strings.Join(c.reach, ", "), from("alwaysReach"))
	}
	for _, e := range c.reach {
		if !policy.OneHost(e) {
			fmt.Fprintf(w, "  note: alwaysReach %q is a range or a wildcard; an answer to a question never writes one (it names one host and port), so if you did not write it yourself, remove it\n", e)
		}
	}
	for _, l := range []struct {
		name string
		v    int
	}{{"timeoutMs", c.Limits.TimeoutMs}, {"memoryMb", c.Limits.MemoryMb}, {"maxProcesses", c.Limits.MaxProcesses}, {"maxWriteMb", c.Limits.MaxWriteMb}} {
		v := "none (the tool's own maximum)"
		if l.v > 0 {
			v = fmt.Sprint(l.v)
		}
		line("limits."+l.name, v, from("limits."+l.name))
	}
}

// DescribeBroken says that the file at path does not read (err, from Load),
// and what that means for a server.
func DescribeBroken(w io.Writer, path string, err error) {
	fmt.Fprintf(w, "ceiling file: %s (does not read)\n  %v\n", path, err)
	fmt.Fprintln(w, "  A running autobox serve keeps the ceiling it read from it last (its log names the problem); one starting now refuses to start until it is fixed.")
}

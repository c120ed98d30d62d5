package ceiling

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/autobox-dev/autobox/internal/exactjson"
	"github.com/autobox-dev/autobox/policy"
)

// File is the ceiling file's format (policy.json). Absent members are open rules.
type File struct {
	Mounts         *[]MountEntry `json:"mounts,omitempty"`
	NeverMount     []string      `json:"neverMount,omitempty"`
	LiftNeverMount []string      `json:"liftNeverMount,omitempty"`
	AllowHosts     *[]string     `json:"allowHosts,omitempty"`
	AllowNetwork   *bool         `json:"allowNetwork,omitempty"`
	Limits         *Limits       `json:"limits,omitempty"`
	AlwaysReach    []string      `json:"alwaysReach,omitempty"` // reach.go
}

// MountEntry is one entry of the file's mounts.
type MountEntry struct {
	Path string `json:"path"`
	Mode string `json:"mode,omitempty"` // ro (default) or rw
}

// Flags are the ceiling's flags of `autobox serve`; each replaces the file's rule
// of the same name (--never-mount and --lift-never-mount add to it).
type Flags struct {
	File           string
	Mountable      []string // PATH[:ro|:rw]
	NeverMount     []string
	LiftNeverMount []string
	Hosts          []string
	NoNetwork      bool
	Limits         Limits
}

// Register adds the flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.File, "policy", "", "the ceiling file (default $XDG_CONFIG_HOME/autobox/policy.json)")
	fs.Func("mountable", "PATH[:ro|:rw]: calls may mount PATH or below it, at most so (repeatable)", appendTo(&f.Mountable))
	fs.Func("never-mount", "PATH: no call may mount PATH, below it or above it (repeatable)", appendTo(&f.NeverMount))
	fs.Func("lift-never-mount", "one of the default never-mountable paths (~/.ssh, ~/.gnupg, ~/.aws, ~/.config/gcloud; * for all) that calls may mount (repeatable)", appendTo(&f.LiftNeverMount))
	fs.Func("ceiling-host", "H: the hosts a call's allowHosts may name (repeatable)", appendTo(&f.Hosts))
	fs.BoolVar(&f.NoNetwork, "no-open-network", false, "refuse allowNetwork (the whole network)")
	fs.IntVar(&f.Limits.TimeoutMs, "max-timeout-ms", 0, "ceiling of a call's timeoutMs")
	fs.IntVar(&f.Limits.MemoryMb, "max-memory-mb", 0, "ceiling of a call's memoryMb")
	fs.IntVar(&f.Limits.MaxProcesses, "max-processes", 0, "ceiling of a call's maxProcesses")
	fs.IntVar(&f.Limits.MaxWriteMb, "max-write-mb", 0, "ceiling of a call's maxWriteMb (and execute_js's maxWriteBytes)")
}

// appendTo is a repeatable flag's setter: each value is added to *list.
func appendTo(list *[]string) func(string) error {
	return func(v string) error {
		*list = append(*list, v)
		return nil
	}
}

// ReadFile reads and checks a ceiling file; a missing file is an empty one
// (exists false). A file with more than one name (hard links) is refused
// (ErrHardLinked, onename.go).
func ReadFile(path string) (f File, exists bool, err error) {
	b, err := readOneName(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false, nil
	}
	if err != nil {
		return File{}, false, fmt.Errorf("reading the ceiling file %s: %w", path, err)
	}
	if err := exactjson.Decode(b, &f); err != nil {
		return File{}, true, fmt.Errorf("the ceiling file %s: %v (its members are mounts, neverMount, liftNeverMount, allowHosts, allowNetwork, limits, alwaysReach)", path, strings.TrimPrefix(err.Error(), "json: "))
	}
	return f, true, nil
}

// Load builds the ceiling in force from the file (flags.File, or DefaultFile) and
// the flags. own lists autobox's own directories in force (its state directory),
// never mountable besides the defaults. A file that cannot be read or is not
// valid is an error: the server does not start with a ceiling it cannot read.
func Load(flags *Flags, own []string) (*Ceiling, error) {
	if flags == nil {
		flags = &Flags{}
	}
	path := flags.File
	if path == "" {
		path = DefaultFile()
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // --policy ./policy.json: never mountable too, by its whole path
	}
	f, exists, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &Ceiling{File: path, Sources: map[string]string{}}
	from := "file " + path
	src := func(rule, flag string, byFlag bool) string {
		if byFlag {
			c.Sources[rule] = "flag --" + flag
		} else {
			c.Sources[rule] = from
		}
		return c.Sources[rule]
	}
	fail := func(where string, err error) (*Ceiling, error) {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	// mounts
	switch {
	case flags.Mountable != nil:
		for _, v := range flags.Mountable {
			e := MountEntry{Path: v}
			if i := strings.LastIndex(v, ":"); i > 0 && (v[i+1:] == "ro" || v[i+1:] == "rw") {
				e = MountEntry{Path: v[:i], Mode: v[i+1:]}
			}
			if err := c.addMount(e); err != nil {
				return fail("--mountable "+v, err)
			}
		}
		c.Mounts = append([]MountRule{}, c.Mounts...)
		src("mounts", "mountable", true)
	case f.Mounts != nil:
		for i, e := range *f.Mounts {
			if err := c.addMount(e); err != nil {
				return fail(fmt.Sprintf("%s: mounts[%d]", path, i), err)
			}
		}
		c.Mounts = append([]MountRule{}, c.Mounts...)
		src("mounts", "", false)
	}
	// neverMount: the defaults, less what is lifted, and the user's own
	lifted := map[string]bool{}
	for _, w := range append(append([]string{}, f.LiftNeverMount...), flags.LiftNeverMount...) {
		if w != "*" && !isSecretDefault(w) {
			return fail("liftNeverMount "+strconv.Quote(w), fmt.Errorf("not one of the defaults that can be lifted (%s, or * for all of them); autobox's own directories stay never mountable", strings.Join(SecretDefaults, ", ")))
		}
		lifted[w] = true
	}
	if len(f.LiftNeverMount) > 0 {
		c.Sources["liftNeverMount"] = from
	}
	if len(flags.LiftNeverMount) > 0 {
		c.Sources["liftNeverMount"] = "flag --lift-never-mount"
	}
	// Autobox's own: the state dir (own), the config directory in force and
	// the ceiling file, each with every path on the way to it.
	c.addDefaults(lifted, append(own, filepath.Dir(DefaultFile()), path))
	for _, w := range f.NeverMount {
		if err := c.addNever(w); err != nil {
			return fail(path+": neverMount", err)
		}
		c.Sources["neverMount"] = from
	}
	for _, w := range flags.NeverMount {
		if err := c.addNever(w); err != nil {
			return fail("--never-mount", err)
		}
		c.Sources["neverMount"] = "flag --never-mount"
	}
	// allowHosts and allowNetwork
	hosts, hostsFlag := f.AllowHosts, false
	if flags.Hosts != nil {
		hosts, hostsFlag = &flags.Hosts, true
	}
	if hosts != nil {
		what := path + ": allowHosts"
		if hostsFlag {
			what = "--ceiling-host"
		}
		a, err := policy.ParseAllowHosts(what, *hosts)
		if err != nil {
			return nil, err
		}
		c.AllowHosts, c.hostEntries = &a, append([]string{}, *hosts...)
		src("allowHosts", "ceiling-host", hostsFlag)
		// A list of hosts is a ceiling on the network: the whole network is
		// beyond it unless allowNetwork says true.
		no := false
		c.AllowNetwork = &no
		src("allowNetwork", "ceiling-host", hostsFlag)
	}
	switch {
	case flags.NoNetwork:
		no := false
		c.AllowNetwork = &no
		src("allowNetwork", "no-open-network", true)
	case f.AllowNetwork != nil:
		v := *f.AllowNetwork
		c.AllowNetwork = &v
		src("allowNetwork", "", false)
	}
	if len(f.AlwaysReach) > 0 {
		if _, err := policy.ParseAllowHosts(path+": alwaysReach", f.AlwaysReach); err != nil {
			return nil, err
		}
		c.reach = append([]string{}, f.AlwaysReach...)
		src("alwaysReach", "", false)
	}
	// limits
	var fl Limits
	if f.Limits != nil {
		fl = *f.Limits
	}
	for _, l := range []struct {
		name, flag string
		file, flg  int
		dst        *int
	}{
		{"timeoutMs", "max-timeout-ms", fl.TimeoutMs, flags.Limits.TimeoutMs, &c.Limits.TimeoutMs},
		{"memoryMb", "max-memory-mb", fl.MemoryMb, flags.Limits.MemoryMb, &c.Limits.MemoryMb},
		{"maxProcesses", "max-processes", fl.MaxProcesses, flags.Limits.MaxProcesses, &c.Limits.MaxProcesses},
		{"maxWriteMb", "max-write-mb", fl.MaxWriteMb, flags.Limits.MaxWriteMb, &c.Limits.MaxWriteMb},
	} {
		if l.file < 0 || l.flg < 0 {
			return fail("limits."+l.name, errors.New("a limit cannot be negative"))
		}
		switch {
		case l.flg > 0:
			*l.dst = l.flg
			src("limits."+l.name, l.flag, true)
		case l.file > 0:
			*l.dst = l.file
			src("limits."+l.name, "", false)
		}
	}
	c.FileExists = exists
	return c, nil
}

func isSecretDefault(w string) bool {
	for _, d := range SecretDefaults {
		if d == w {
			return true
		}
	}
	return false
}

func (c *Ceiling) addMount(e MountEntry) error {
	var m Mode
	switch e.Mode {
	case "", "ro":
		m = ReadOnly
	case "rw":
		m = ReadWrite
	default:
		return fmt.Errorf("mode %q is not \"ro\" or \"rw\"", e.Mode)
	}
	p, err := expand(e.Path)
	if err != nil {
		return err
	}
	c.Mounts = append(c.Mounts, MountRule{Path: p, Mode: m})
	return nil
}

func (c *Ceiling) addNever(w string) error {
	p, err := expand(w)
	if err != nil {
		return err
	}
	c.Never = append(c.Never, Never{Path: p, Written: w})
	return nil
}

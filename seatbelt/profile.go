package seatbelt

import (
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/autobox-dev/autobox/policy"
)

var (
	//go:embed base.sbpl
	baseSBPL string
	//go:embed exec.sbpl
	execSBPL string
	//go:embed network.sbpl
	networkSBPL string
	//go:embed worker.sbpl
	workerSBPL string
)

// Parameter name prefixes. A generated rule refers to the n-th path of a kind
// as (param "PREFIX_n"); Args passes it as -D PREFIX_n=path.
const (
	paramUp    = "UP"    // ancestors of a mount: stat only, so paths resolve
	paramRO    = "RO"    // policy.Sandbox.ReadOnly
	paramRW    = "RW"    // policy.Sandbox.ReadWrite
	paramDev   = "DEV"   // policy.Sandbox.Devices
	paramDW    = "DW"    // policy.Sandbox.DenyWrite
	paramHid   = "HID"   // policy.Sandbox.Hidden
	paramGuard = "GUARD" // writable ancestors of a ReadOnly/DenyWrite path
	paramExe   = "EXE"   // the JS worker's binary
)

// ExecProfile returns the profile text and the -D parameters (NAME=path, in
// the order the profile first refers to them) that enforce p on an
// exec_command process tree.
//
// The paths in p must be absolute, clean and canonical (/private/tmp, not
// /tmp): seatbelt compares canonical paths. A path that is not absolute and
// clean is never granted; if it is a ReadOnly or DenyWrite path, which must
// not be written, the profile denies every write instead (fail closed).
//
// Rule order matters because the last matching rule decides: the system is
// readable except user-data prefixes; mounts and the scratch dir are opened
// after that; the write denials of ReadOnly and DenyWrite paths come last so
// they win over any ReadWrite path that contains them.
func ExecProfile(p *policy.Sandbox) (profile string, params []string) {
	b := newBuilder(baseSBPL, execSBPL)
	ro, roBad := cleanPaths(p.ReadOnly)
	rw, _ := cleanPaths(p.ReadWrite)
	dev, _ := cleanPaths(p.Devices)
	dw, dwBad := cleanPaths(p.DenyWrite)
	hid, _ := cleanPaths(p.Hidden)

	// Parameters are named in the order the rules below first use them.
	up := b.names(paramUp, ancestors(slices.Concat(ro, rw)))
	roN := b.names(paramRO, ro)
	rwN := b.names(paramRW, rw)
	devN := b.names(paramDev, dev)
	dwN := b.names(paramDW, dw)
	guardN := b.names(paramGuard, guards(slices.Concat(ro, dw), rw))
	hidN := b.names(paramHid, hid)

	b.rule("Mounts: stat the directories above them, so paths to them resolve.",
		"allow file-read-metadata", each(literal, up))
	b.rule("Mounts and the scratch dir: readable, mappable and executable.",
		"allow file-read* file-map-executable process-exec", append(each(subpath, roN), each(subpath, rwN)...))
	b.rule("Writable: ReadWrite mounts and the scratch dir.",
		"allow file-write*", each(subpath, rwN))
	b.rule("Unix sockets bind and connect only where the command can write anyway.",
		"allow network-bind", each(localSocket, rwN))
	b.rule("", "allow network-outbound", each(remoteSocket, rwN))
	b.rule("Devices the policy names.",
		"allow file-read* file-write-data file-ioctl", each(literal, devN))
	b.rule("Secrets below readable paths (Hidden): their contents are never read.",
		"deny file-read-data file-map-executable process-exec", each(subpath, hidN))
	switch {
	case p.PrivateNetwork:
		// Network by host: the proxy on loopback, nothing else; no name
		// service either (names resolve at the proxy). A port is a number,
		// not a path: it is written into the profile.
		b.rule("Network by host (allowHosts): out to the proxy's loopback port, nowhere else.",
			"allow network-outbound", []string{fmt.Sprintf(`(remote tcp "localhost:%d")`, p.ProxyPort)})
	case p.AllowNetwork:
		b.text.WriteString("\n")
		b.text.WriteString(networkSBPL)
	}
	b.rule("Last, so they win: ReadOnly and DenyWrite paths are never written, nor are\n"+
		"the writable directories above them renamed or removed (that would move them).",
		"deny file-write*", slices.Concat(each(subpath, roN), each(subpath, dwN), each(literal, guardN)))
	if roBad || dwBad {
		b.comment("A ReadOnly or DenyWrite path was not absolute and clean: deny every write.")
		b.text.WriteString("(deny file-write*)\n")
	}
	if !p.AllowExec {
		b.comment("No program may be executed.")
		b.text.WriteString("(deny process-exec)\n")
	}
	return b.text.String(), b.params
}

// WorkerProfile returns the deny-by-default profile and parameters for the JS
// worker whose binary is exe (absolute and canonical, like os.Executable after
// filepath.EvalSymlinks): it may exec exe (sandbox-exec's own exec of it), read
// and map exe and the system libraries, and nothing else of note: no file
// writes, no network, no fork, no other program.
func WorkerProfile(exe string) (profile string, params []string) {
	b := newBuilder(baseSBPL, workerSBPL)
	b.define(paramExe, exe)
	var up []string
	if usable(exe) {
		up = b.names(paramUp, ancestors([]string{exe}))
	}
	b.rule("The directories above the worker binary: stat only, so its path resolves.",
		"allow file-read-metadata", each(literal, up))
	return b.text.String(), b.params
}

// builder accumulates profile text and the parameters it refers to.
type builder struct {
	text   strings.Builder
	params []string
}

func newBuilder(parts ...string) *builder {
	b := &builder{}
	for _, part := range parts {
		b.text.WriteString(part)
		b.text.WriteString("\n")
	}
	return b
}

// define adds parameter name=value.
func (b *builder) define(name, value string) {
	b.params = append(b.params, name+"="+value)
}

// names defines PREFIX_0..PREFIX_n-1 for values and returns the names.
func (b *builder) names(prefix string, values []string) []string {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = fmt.Sprintf("%s_%d", prefix, i)
		b.define(names[i], v)
	}
	return names
}

// comment writes each line of s as an SBPL comment.
func (b *builder) comment(s string) {
	for _, line := range strings.Split(s, "\n") {
		b.text.WriteString("; " + line + "\n")
	}
}

// rule writes the comment and (action filter...), or nothing when there are
// no filters: an allow or deny without filters would apply to every path.
func (b *builder) rule(comment, action string, filters []string) {
	if len(filters) == 0 {
		return
	}
	if comment != "" {
		b.comment(comment)
	}
	b.text.WriteString("(" + action)
	for _, f := range filters {
		b.text.WriteString("\n  " + f)
	}
	b.text.WriteString(")\n")
}

func literal(name string) string { return fmt.Sprintf("(literal (param %q))", name) }
func subpath(name string) string { return fmt.Sprintf("(subpath (param %q))", name) }
func localSocket(name string) string {
	return fmt.Sprintf("(local unix-socket (subpath (param %q)))", name)
}
func remoteSocket(name string) string {
	return fmt.Sprintf("(remote unix-socket (subpath (param %q)))", name)
}

func each(filter func(string) string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filter(n)
	}
	return out
}

// usable reports whether p is a path seatbelt can match: absolute and clean. A
// NUL could not be passed to sandbox-exec at all.
func usable(p string) bool {
	return path.IsAbs(p) && path.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// cleanPaths returns the usable paths of ps, without duplicates, and whether
// any path was unusable.
func cleanPaths(ps []string) (out []string, bad bool) {
	seen := map[string]bool{}
	for _, p := range ps {
		switch {
		case !usable(p):
			bad = true
		case !seen[p]:
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, bad
}

// ancestors returns the proper ancestors of ps other than "/", each once, in
// order of first appearance.
func ancestors(ps []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range ps {
		for _, a := range parents(p) {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

// parents returns the proper ancestors of the clean absolute path p, outermost
// first, without "/".
func parents(p string) []string {
	var out []string
	for a := path.Dir(p); a != "/" && a != "."; a = path.Dir(a) {
		out = append([]string{a}, out...)
	}
	return out
}

// guards returns the ancestors of protected paths that lie in a writable path.
// Seatbelt checks a rename against the renamed path only, so renaming such a
// directory would carry the protected path to a name no rule protects.
func guards(protected, writable []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range protected {
		for _, a := range parents(p) {
			if !seen[a] && insideAny(a, writable) {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}

func insideAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

package seatbelt

import (
	"fmt"
	"strings"
	"testing"
)

// A minimal reader for the SBPL subset autobox writes, so that a typo, an
// unbalanced parenthesis or an operation macOS does not know is caught here,
// where sandbox-exec cannot run.

type node struct {
	atom string  // symbol or string (strings keep their quotes)
	list []*node // when atom == ""
}

func (n *node) head() string {
	if len(n.list) == 0 {
		return ""
	}
	return n.list[0].atom
}

func parseSBPL(src string) ([]*node, error) {
	var stack [][]*node
	var top []*node
	add := func(n *node) {
		if len(stack) == 0 {
			top = append(top, n)
		} else {
			stack[len(stack)-1] = append(stack[len(stack)-1], n)
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ';':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\n' || c == '\t':
			i++
		case c == '(':
			stack = append(stack, nil)
			i++
		case c == ')':
			if len(stack) == 0 {
				return nil, fmt.Errorf("unbalanced ) at byte %d", i)
			}
			l := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			add(&node{list: l})
			i++
		case c == '"' || (c == '#' && i+1 < len(src) && src[i+1] == '"'):
			start := i
			if c == '#' {
				i++
			}
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' && i+1 < len(src) {
					i++
				}
				if src[i] == '\n' {
					return nil, fmt.Errorf("newline in string at byte %d", i)
				}
				i++
			}
			if i >= len(src) {
				return nil, fmt.Errorf("unterminated string at byte %d", start)
			}
			i++
			add(&node{atom: src[start:i]})
		default:
			start := i
			for i < len(src) && !strings.ContainsRune(" \n\t();\"", rune(src[i])) {
				i++
			}
			add(&node{atom: src[start:i]})
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%d unclosed (", len(stack))
	}
	return top, nil
}

// Operations and filters known to every macOS that runs autobox (each is used
// by shipping profiles: Apple's, Chromium's or codex's). sandbox-exec rejects
// a whole profile over one unknown name.
var (
	knownOps = set("default", "file-read*", "file-read-data", "file-read-metadata",
		"file-write*", "file-write-data", "file-ioctl", "file-map-executable",
		"process-fork", "process-exec", "process-info*", "signal", "sysctl-read",
		"mach-lookup", "ipc-posix-sem", "system-socket",
		"network-bind", "network-inbound", "network-outbound")
	knownFilters = set("literal", "subpath", "param", "require-all", "require-not",
		"require-any", "target", "sysctl-name", "sysctl-name-prefix", "global-name",
		"socket-domain", "socket-protocol", "local", "remote", "unix-socket", "ip", "tcp")
	// Rules allowed to have no filter, i.e. to apply everywhere.
	broadAllows = set("allow process-fork", "allow ipc-posix-sem",
		"allow file-read* file-map-executable process-exec")
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

// checkSBPL parses profile and checks every form.
func checkSBPL(t *testing.T, profile string) {
	t.Helper()
	forms, err := parseSBPL(profile)
	if err != nil {
		t.Fatalf("profile does not parse: %v", err)
	}
	if len(forms) < 2 || forms[0].head() != "version" || forms[1].head() != "deny" || forms[1].list[1].atom != "default" {
		t.Fatalf("profile must start with (version 1) (deny default)")
	}
	for _, f := range forms[1:] {
		action := f.head()
		if action != "allow" && action != "deny" {
			t.Fatalf("unexpected top-level form %q", action)
		}
		var ops []string
		i := 1
		for ; i < len(f.list) && f.list[i].atom != ""; i++ {
			if !knownOps[f.list[i].atom] {
				t.Errorf("unknown operation %q", f.list[i].atom)
			}
			ops = append(ops, f.list[i].atom)
		}
		if len(ops) == 0 {
			t.Errorf("rule without operation")
		}
		if i == len(f.list) {
			rule := action + " " + strings.Join(ops, " ")
			if action == "allow" && !broadAllows[rule] {
				t.Errorf("(%s) has no filter, so it applies everywhere", rule)
			}
		}
		for _, flt := range f.list[i:] {
			checkFilter(t, flt)
		}
	}
}

func checkFilter(t *testing.T, n *node) {
	t.Helper()
	if n.atom != "" {
		if !strings.HasPrefix(n.atom, `"`) && !strings.HasPrefix(n.atom, `#"`) && !isConstant(n.atom) {
			t.Errorf("unexpected atom %q in filter", n.atom)
		}
		return
	}
	if !knownFilters[n.head()] {
		t.Errorf("unknown filter %q", n.head())
	}
	if n.head() == "param" && (len(n.list) != 2 || !strings.HasPrefix(n.list[1].atom, `"`)) {
		t.Errorf("param needs one string name")
	}
	for _, c := range n.list[1:] {
		checkFilter(t, c)
	}
}

func isConstant(a string) bool {
	switch a {
	case "AF_UNIX", "AF_SYSTEM", "same-sandbox", "self", "2", "unix-socket", "ip", "tcp":
		return true
	}
	return false
}

func TestParseSBPLRejectsBrokenText(t *testing.T) {
	for _, bad := range []string{"(allow", "(allow))", `(allow file-read* (literal "x))`, "(allow file-read* (literal \"a\nb\"))"} {
		if _, err := parseSBPL(bad); err == nil {
			t.Errorf("parseSBPL(%q) accepted broken text", bad)
		}
	}
	if _, err := parseSBPL(`(version 1) (allow file-read* (literal "/a\"b")) ; c (`); err != nil {
		t.Errorf("parseSBPL rejected good text: %v", err)
	}
}

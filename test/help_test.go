//go:build linux

package test

import (
	"regexp"
	"strings"
	"testing"
)

// TestEveryHelpExitsZero: --help and -h of every command and subcommand that
// `autobox help` lists print help on stdout, nothing on stderr, and exit 0 (a
// script or package check that runs `autobox serve --help` must not see a
// failure). The commands are read from the help text itself, so a command added
// there is checked too. Positive control of the check: an unknown flag still
// exits 2.
func TestEveryHelpExitsZero(t *testing.T) {
	h := newCLIHome(t)
	top := h.run("", "help")
	if top.code != 0 {
		t.Fatalf("autobox help: %s", top)
	}
	// "  autobox task workspace|wrap|run   ...": the command, and its subcommands.
	line := regexp.MustCompile(`(?m)^  autobox ([a-z]+)(?: ([a-z]+(?:\|[a-z]+)+))?`)
	var commands [][]string
	for _, m := range line.FindAllStringSubmatch(top.stdout, -1) {
		if m[1] == "help" || m[1] == "version" {
			continue
		}
		commands = append(commands, []string{m[1]})
		if m[2] != "" {
			for _, sub := range strings.Split(m[2], "|") {
				commands = append(commands, []string{m[1], sub})
			}
		}
	}
	if len(commands) < 15 {
		t.Fatalf("read %d commands from autobox help: %q", len(commands), top.stdout)
	}
	for _, c := range commands {
		for _, flag := range []string{"--help", "-h"} {
			r := h.run("", append(c, flag)...)
			if r.code != 0 || r.stderr != "" || !strings.Contains(r.stdout, "autobox") {
				t.Errorf("autobox %s: exit %d, %d bytes on stdout, stderr %.200q", strings.Join(r.args, " "), r.code, len(r.stdout), r.stderr)
			}
		}
	}
	if r := h.run("", "serve", "--no-such-flag"); r.code != 2 || !strings.Contains(r.stderr, "no-such-flag") {
		t.Errorf("an unknown serve flag: %s", r)
	}
}

//go:build linux

// The README's client snippets as tests: each parses as its client reads it
// and starts the binary `make install` installs, with `serve`.

package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeHome is the home directory the README's snippets are written for ("replace
// /home/you with your home"): the installed path is what `make install` makes with it.
const readmeHome = "/home/you"

// installedPath is where the Makefile's install target puts the binary for a user
// whose home is home, read from `make -n install` (make prints the recipe, runs nothing).
func installedPath(t *testing.T, home string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: the installed path is the Makefile's install target's")
	}
	cmd := exec.Command("make", "-n", "install")
	cmd.Dir = repoRoot
	// Nothing of this environment's own: no PREFIX, DESTDIR or MAKEFLAGS of a make
	// that runs this test.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n install: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^install -m 0?755 \S+ "([^"]+)"$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("make -n install: no `install -m 0755 BIN \"DEST\"` line in:\n%s", out)
	}
	return string(m[1])
}

// snippetArgv reads the command a client's config snippet starts.
func snippetArgv(b docBlock, client string) ([]string, error) {
	type stdio struct {
		Type    string   `json:"type"`
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	decode := func(v any) error {
		if b.info != "json" {
			return fmt.Errorf("want a json block, got %q", b.info)
		}
		return json.Unmarshal([]byte(b.body), v)
	}
	switch client {
	case "claude-desktop", "cursor":
		var c struct {
			Servers map[string]stdio `json:"mcpServers"`
		}
		if err := decode(&c); err != nil {
			return nil, err
		}
		s, ok := c.Servers["autobox"]
		if !ok {
			return nil, errors.New(`no "mcpServers"."autobox"`)
		}
		return append([]string{s.Command}, s.Args...), nil
	case "vscode":
		var c struct {
			Servers map[string]stdio `json:"servers"`
		}
		if err := decode(&c); err != nil {
			return nil, err
		}
		s, ok := c.Servers["autobox"]
		if !ok || s.Type != "stdio" {
			return nil, fmt.Errorf(`no "servers"."autobox" of type "stdio" (%+v)`, s)
		}
		return append([]string{s.Command}, s.Args...), nil
	case "opencode":
		var c struct {
			MCP map[string]struct {
				Type    string   `json:"type"`
				Command []string `json:"command"`
				Enabled bool     `json:"enabled"`
			} `json:"mcp"`
		}
		if err := decode(&c); err != nil {
			return nil, err
		}
		s, ok := c.MCP["autobox"]
		if !ok || s.Type != "local" || !s.Enabled {
			return nil, fmt.Errorf(`no enabled "mcp"."autobox" of type "local" (%+v)`, s)
		}
		return s.Command, nil
	case "codex":
		if b.info != "toml" {
			return nil, fmt.Errorf("want a toml block, got %q", b.info)
		}
		kv, err := tomlTable(b.body, "mcp_servers.autobox")
		if err != nil {
			return nil, err
		}
		var command string
		var args []string
		if err := json.Unmarshal([]byte(kv["command"]), &command); err != nil {
			return nil, fmt.Errorf("command: %w", err)
		}
		if a, ok := kv["args"]; ok {
			if err := json.Unmarshal([]byte(a), &args); err != nil {
				return nil, fmt.Errorf("args: %w", err)
			}
		}
		return append([]string{command}, args...), nil
	case "claude-code":
		if b.info != "sh" {
			return nil, fmt.Errorf("want an sh block, got %q", b.info)
		}
		f := strings.Fields(strings.TrimSpace(b.body))
		i := slices.Index(f, "--")
		if len(f) < 4 || !slices.Equal(f[:3], []string{"claude", "mcp", "add"}) || i < 0 || !slices.Contains(f[3:i], "autobox") {
			return nil, fmt.Errorf("not `claude mcp add … autobox -- COMMAND ARGS`: %q", b.body)
		}
		return f[i+1:], nil
	}
	return nil, fmt.Errorf("unknown client %q", client)
}

// tomlTable reads the keys of one table of a TOML text, as far as the snippets need:
// `[table]` headers, comments, and `key = value` lines whose value is a basic string
// or an array of them on one line (the same text in JSON, which the caller decodes).
func tomlTable(text, table string) (map[string]string, error) {
	kv := map[string]string{}
	var in, seen bool
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			in = line == "["+table+"]"
			seen = seen || in
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("line %d: %q is not key = value", n+1, line)
			}
			if !json.Valid([]byte(strings.TrimSpace(v))) {
				return nil, fmt.Errorf("line %d: value %s is not a string or array of strings this reader takes", n+1, v)
			}
			if in {
				kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	if !seen {
		return nil, fmt.Errorf("no [%s] table", table)
	}
	return kv, nil
}

// TestReadmeClientSnippets: each client's snippet in the README parses as its client
// reads it and starts the binary `make install` installs, with `serve`; and the
// binary takes `serve` (it serves until its input ends, then exits 0).
func TestReadmeClientSnippets(t *testing.T) {
	want := []string{installedPath(t, readmeHome), "serve"}
	readme := readDoc(t, "README.md")
	if !strings.Contains(readme, "installed "+want[0]) {
		t.Errorf("the README does not quote make install's line %q", "installed "+want[0])
	}
	found := map[string]bool{}
	for _, b := range blocksOf("README.md", readme) {
		client, ok := strings.CutPrefix(b.marker, "client: ")
		if !ok {
			continue
		}
		if found[client] {
			t.Errorf("%s: a second snippet for %s", b, client)
		}
		found[client] = true
		argv, err := snippetArgv(b, client)
		if err != nil {
			t.Errorf("%s (%s): %v", b, client, err)
			continue
		}
		if !slices.Equal(argv, want) {
			t.Errorf("%s (%s): starts %q, want %q (make install's path, then serve)", b, client, argv, want)
		}
	}
	for _, c := range []string{"claude-code", "claude-desktop", "cursor", "codex", "opencode", "vscode"} {
		if !found[c] {
			t.Errorf("the README has no snippet marked <!-- client: %s -->", c)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = newCLIHome(t).env
	out, err := cmd.CombinedOutput() // stdin: /dev/null, the end of input at once
	if err != nil {
		t.Errorf("autobox serve with no input: %v\n%s", err, out)
	}
}

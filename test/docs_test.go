//go:build linux

package test

// The docs as tests: the README's client snippets name the binary `make install`
// installs and its `serve` subcommand, the examples marked to run in the README and
// docs/ run against the built binary and exit as they say, and every link between the
// README, docs/ and SECURITY.md resolves, anchors included.
//
// Markers, in HTML comments (invisible on GitHub) on the line before a fence:
//
//	<!-- client: NAME -->                  a client's config snippet (json, toml or sh)
//	<!-- doctest: exit N -->               an sh example the doc test runs: it exits N
//	<!-- doctest: exit N stdout "TEXT" --> ... and its stdout holds TEXT (Go-quoted)

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// repoRoot is where the docs are: the test runs in test/.
const repoRoot = ".."

// readmeHome is the home directory the README's snippets are written for ("replace
// /home/you with your home"): the installed path is what `make install` makes with it.
const readmeHome = "/home/you"

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file   string // relative to the repository
	line   int    // of the opening fence, 1-based
	info   string // the fence's info string: json, sh, ...
	body   string
	marker string // the HTML comment on the line before the fence, without <!-- -->
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// docFiles lists the README, SECURITY.md and docs/*.md, relative to the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md found (%v)", err)
	}
	files := []string{"README.md", "SECURITY.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(repoRoot, d)
		files = append(files, rel)
	}
	return files
}

func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var markerRE = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)

// blocksOf returns the fenced code blocks of a Markdown file.
func blocksOf(rel, text string) []docBlock {
	var out []docBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		open := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(open, "```") {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		b := docBlock{file: rel, line: i + 1, info: strings.TrimPrefix(open, "```")}
		if i > 0 {
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.marker = m[1]
			}
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

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

var doctestRE = regexp.MustCompile(`^doctest: exit (\d+)(?: stdout ("(?:[^"\\]|\\.)*"))?$`)

// TestDocsExamples runs every sh example marked <!-- doctest: … --> in the README and
// docs/ against the built binary (the `autobox` its PATH finds), in a home of its own,
// and checks it exits as the marker says (and prints what it says, if it says).
func TestDocsExamples(t *testing.T) {
	h := newCLIHome(t)
	binDir := filepath.Join(h.dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(binDir, "autobox")); err != nil {
		t.Fatal(err)
	}
	env := slices.Clone(h.env)
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + binDir + ":" + p
		}
	}
	ran := map[string]int{}
	for _, rel := range docFiles(t) {
		for _, b := range blocksOf(rel, readDoc(t, rel)) {
			if !strings.HasPrefix(b.marker, "doctest") {
				continue
			}
			m := doctestRE.FindStringSubmatch(b.marker)
			if m == nil {
				t.Errorf("%s: marker %q is not `doctest: exit N [stdout \"TEXT\"]`", b, b.marker)
				continue
			}
			if b.info != "sh" || !regexp.MustCompile(`\bautobox (exec|js)\b`).MatchString(b.body) {
				t.Errorf("%s: a doctest is an sh block that calls autobox exec or autobox js", b)
				continue
			}
			code, _ := strconv.Atoi(m[1])
			var stdout string
			if m[2] != "" {
				var err error
				if stdout, err = strconv.Unquote(m[2]); err != nil {
					t.Errorf("%s: stdout %s: %v", b, m[2], err)
					continue
				}
			}
			ran[rel]++
			// In the mode this host gives, and without namespaces (landlock-only),
			// which Ubuntu 24.04's ordinary users get: the docs hold for both.
			for _, mode := range []struct{ name, env string }{{"default", ""}, {"no-namespaces", "AUTOBOX_NO_NAMESPACES=1"}} {
				t.Run(strings.ReplaceAll(b.String(), "/", "_")+"/"+mode.name, func(t *testing.T) {
					env := slices.Clone(env)
					if mode.env != "" {
						env = append(env, mode.env)
					}
					runDoctest(t, b, env, h.dir, code, stdout)
				})
			}
		}
	}
	// The markers are the test's input: a doc that lost them would pass without checking.
	if ran["README.md"] < 2 {
		t.Errorf("the README has %d examples marked <!-- doctest -->, want the try-it ones (2)", ran["README.md"])
	}
	total := 0
	for _, n := range ran {
		total += n
	}
	if total < 5 {
		t.Errorf("%d examples marked <!-- doctest --> in all (%v), want at least 5", total, ran)
	}
}

// runDoctest runs one marked example with sh -e in dir and checks how it exits.
func runDoctest(t *testing.T, b docBlock, env []string, dir string, code int, stdout string) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-e", "-c", b.body)
	cmd.Env = env
	cmd.Dir = dir
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	got := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running it: %v", err)
	}
	if got != code || !strings.Contains(out.String(), stdout) {
		t.Errorf("%s says exit %d, stdout with %q; it exited %d\n%s\nstdout: %q\nstderr: %q", b, code, stdout, got, b.body, out.String(), errOut.String())
	}
	noLeftovers(t)
}

var (
	linkRE    = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// proseOf is a Markdown text without its fenced blocks and code spans (blank lines and
// spaces in their place), where links and headings are.
func proseOf(text string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			b.WriteString("\n")
			continue
		}
		if fence {
			b.WriteString("\n")
			continue
		}
		b.WriteString(stripCodeSpans(line) + "\n")
	}
	return b.String()
}

// stripCodeSpans blanks `code` spans of a line (runs of backticks of the same length).
func stripCodeSpans(line string) string {
	out := []byte(line)
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		tick := strings.Repeat("`", n)
		end := strings.Index(line[i+n:], tick)
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < i+n+end+n; k++ {
			out[k] = ' '
		}
		i += n + end + n
	}
	return string(out)
}

// anchorsOf is the set of heading anchors GitHub makes for a Markdown text: lower
// case, letters, digits, spaces, hyphens and underscores kept, spaces made hyphens, a
// repeated anchor numbered (-1, -2, ...).
func anchorsOf(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		m := headingRE.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(m[2]) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				slug.WriteRune(r)
			}
		}
		a := slug.String()
		for n := 1; out[a]; n++ {
			a = fmt.Sprintf("%s-%d", slug.String(), n)
		}
		out[a] = true
	}
	return out
}

// TestDocsLinks: every relative link in the README, docs/ and SECURITY.md names a file
// that exists, and its #anchor a heading of that file; and the README links every page
// of docs/ (its table of contents).
func TestDocsLinks(t *testing.T) {
	files := docFiles(t)
	texts := map[string]string{}
	for _, rel := range files {
		texts[rel] = readDoc(t, rel)
	}
	links := 0
	linked := map[string]bool{}
	for _, rel := range files {
		for _, m := range linkRE.FindAllStringSubmatch(proseOf(texts[rel]), -1) {
			target := m[2]
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, _ := strings.Cut(target, "#")
			dest := rel
			if path != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(rel), path))
				if _, err := os.Stat(filepath.Join(repoRoot, dest)); err != nil {
					t.Errorf("%s: link [%s](%s): %s does not exist", rel, m[1], target, dest)
					continue
				}
			}
			if rel == "README.md" {
				linked[dest] = true
			}
			if anchor == "" {
				continue
			}
			text, ok := texts[dest]
			if !ok {
				t.Errorf("%s: link [%s](%s): an anchor into %s, which is not a doc this test reads", rel, m[1], target, dest)
				continue
			}
			if !anchorsOf(text)[anchor] {
				t.Errorf("%s: link [%s](%s): %s has no heading whose anchor is #%s", rel, m[1], target, dest, anchor)
			}
		}
	}
	if links < 50 {
		t.Errorf("found %d relative links in %d files; the link reader is broken", links, len(files))
	}
	for _, rel := range files {
		if strings.HasPrefix(rel, "docs"+string(filepath.Separator)) && !linked[rel] {
			t.Errorf("the README does not link %s (its table of contents lists every page of docs/)", rel)
		}
	}
	if !linked["LICENSE"] || !linked["SECURITY.md"] {
		t.Errorf("the README links LICENSE: %v, SECURITY.md: %v; want both", linked["LICENSE"], linked["SECURITY.md"])
	}
}

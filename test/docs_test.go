//go:build linux

package test

// The docs as tests: the README's client snippets name the binary `make install`
// installs and its `serve` subcommand, the examples marked to run in the README and
// docs/ run against the built binary and exit as they say, and every link between the
// README, docs/ and SECURITY.md resolves, anchors included.
// This file reads the docs and runs the examples; the snippets are
// docsnippets_test.go, the links docslinks_test.go.
//
// Markers, in HTML comments (invisible on GitHub) on the line before a fence:
//
//	<!-- client: NAME -->                  a client's config snippet (json, toml or sh)
//	<!-- doctest: exit N -->               an sh example the doc test runs: it exits N
//	<!-- doctest: exit N stdout "TEXT" --> ... and its stdout holds TEXT (Go-quoted)

import (
	"context"
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
)

// repoRoot is where the docs are: the test runs in test/.
const repoRoot = ".."

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

//go:build linux

// The links between the README, docs/ and SECURITY.md as tests: each names a
// file that exists and, with #anchor, a heading of it (as GitHub makes anchors).

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

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

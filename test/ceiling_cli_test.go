//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCeilingCLI: the command line holds its calls to the same ceiling file.
func TestCeilingCLI(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	allowed := t.TempDir()
	writeFile(t, filepath.Join(h.dir, "config", "autobox", "policy.json"), `{"mounts": [{"path": "`+allowed+`"}], "allowNetwork": false}`)
	file := filepath.Join(h.dir, "config", "autobox", "policy.json")
	h.want(h.run("", "exec", "--mount", allowed+":/mnt/a:rw", "--", "touch", "/mnt/a/ran"), 125, "", `"mounts" rule (`+file+")")
	if _, err := os.Stat(filepath.Join(allowed, "ran")); err == nil {
		t.Error("the refused command ran")
	}
	h.want(h.run("", "exec", "--network", "--", "true"), 125, "", `"allowNetwork" rule`)
	h.want(h.run("", "js", "--mount", allowed+":/mnt/a:rw", "-e", "1"), 125, "", `"mounts" rule`)
	h.want(h.run("", "exec", "--mount", allowed+":/mnt/a", "--", "ls", "/mnt/a"), 0, "", "")
	r := h.run("", "policy")
	if r.code != 0 || !strings.Contains(r.stdout, allowed+" ro") || !strings.Contains(r.stdout, "file "+file) || !strings.Contains(r.stdout, "~/.ssh") {
		t.Errorf("autobox policy: %s", r)
	}
}

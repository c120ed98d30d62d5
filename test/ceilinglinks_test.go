//go:build linux

package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCeilingFileThroughLinks (issue 35 item 2): the ceiling file reached
// through links, as dotfile managers lay it out, cannot be replaced by a call:
// every path on the way to it (the link, the directory holding the link, the
// config directory in force) is never mountable as autobox's own. Before, the
// rule held the link's target alone, and a call with rw on the directory
// holding the link replaced it with a ceiling of its own (the next call got
// the network). Positive controls: the same directory read-only, and a
// sibling directory read-write.
func TestCeilingFileThroughLinks(t *testing.T) {
	requireSandbox(t)
	const ceilingText = `{"allowNetwork": false}`
	mkdir := func(p string) string {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, at string) {
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		// layout makes the files below home and returns XDG_CONFIG_HOME, the
		// directory a call mounts rw to replace the link, the link, and what
		// the refusal names.
		layout func(home string) (xdg, attack, link, names string)
	}{
		{"stow: the config directory a link into dotfiles", func(home string) (string, string, string, string) {
			dot := mkdir(filepath.Join(home, "dotfiles/autobox/.config/autobox"))
			writeFile(t, filepath.Join(dot, "policy.json"), ceilingText)
			cfg := mkdir(filepath.Join(home, ".config"))
			link("../dotfiles/autobox/.config/autobox", filepath.Join(cfg, "autobox"))
			return cfg, cfg, filepath.Join(cfg, "autobox"), "(a link to ../dotfiles/autobox/.config/autobox"
		}},
		{"home-manager: the file a link into a store", func(home string) (string, string, string, string) {
			store := mkdir(filepath.Join(home, "store/abc-home-manager-files"))
			writeFile(t, filepath.Join(store, "policy.json"), ceilingText)
			cfg := mkdir(filepath.Join(home, ".config"))
			mkdir(filepath.Join(cfg, "autobox"))
			link(filepath.Join(store, "policy.json"), filepath.Join(cfg, "autobox/policy.json"))
			return cfg, cfg, filepath.Join(cfg, "autobox/policy.json"), "" // the config directory in force is named
		}},
		{"XDG_CONFIG_HOME a link", func(home string) (string, string, string, string) {
			real := mkdir(filepath.Join(home, "b/real/autobox"))
			writeFile(t, filepath.Join(real, "policy.json"), ceilingText)
			a := mkdir(filepath.Join(home, "a"))
			link(filepath.Join(home, "b/real"), filepath.Join(a, "xdg"))
			return filepath.Join(a, "xdg"), a, filepath.Join(a, "xdg"), "" // the config directory as written is named
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			xdg, attack, lnk, names := c.layout(home)
			s := startEnv(t, []string{"XDG_CONFIG_HOME=" + xdg})
			before, _ := os.Readlink(lnk)
			// Replace the link (whichever it is) with a ceiling of the call's own.
			script := `cd /mnt/c && for l in $(find . -maxdepth 2 -type l); do rm "$l"; mkdir -p "$l" 2>/dev/null; done; mkdir -p autobox xdg/autobox; for d in autobox xdg/autobox; do echo {} > $d/policy.json; done; echo replaced`
			rw := []map[string]any{{"hostPath": attack, "sandboxPath": "/mnt/c", "mode": "rw"}}
			msg := ceilingErr(s, "exec_command", map[string]any{"command": bash(script), "mounts": rw})
			if !strings.Contains(msg, "read-write, holds "+attack+"/") || !strings.Contains(msg, "no call may mount") || names != "" && !strings.Contains(msg, names) {
				t.Errorf("rw mount of %s: %q, want it refused naming the link", attack, msg)
			}
			if after, err := os.Readlink(lnk); err != nil || after != before {
				t.Fatalf("the link %s was replaced: %q %v (was %q)", lnk, after, err, before)
			}
			if msg := ceilingErr(s, "exec_command", map[string]any{"command": []string{"true"}, "allowNetwork": true}); !strings.Contains(msg, "allowNetwork") {
				t.Errorf("the ceiling is not in force: %q", msg)
			}
			// Positive controls: read-only, it mounts; a sibling, read-write.
			ro := []map[string]any{{"hostPath": attack, "sandboxPath": "/mnt/c", "mode": "ro"}}
			if o, isErr := s.exec(map[string]any{"command": []string{"ls", "/mnt/c"}, "mounts": ro}); isErr || o.code() != 0 {
				t.Errorf("ro mount of %s: %+v", attack, o)
			}
			sib := mkdir(filepath.Join(home, "work"))
			if o, isErr := s.exec(map[string]any{"command": bash("echo x > /mnt/w/f && echo ok"), "mounts": []map[string]any{{"hostPath": sib, "sandboxPath": "/mnt/w", "mode": "rw"}}}); isErr || o.Stdout != "ok\n" {
				t.Errorf("rw mount of a sibling: %+v", o)
			}
		})
	}
}

// TestCeilingFileNotYetWritten: where the user has no ceiling file yet, the
// path it would have is autobox's own all the same: a call with rw on the
// config directory cannot write one for the next server to read (a ceiling
// of the command's choosing: alwaysReach, mountable). Positive control: the
// directory read-only.
func TestCeilingFileNotYetWritten(t *testing.T) {
	requireSandbox(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, ".config")
	if err := os.MkdirAll(cfg, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startEnv(t, []string{"XDG_CONFIG_HOME=" + cfg})
	script := `mkdir -p /mnt/c/autobox && echo '{"alwaysReach": ["*.com:443"]}' > /mnt/c/autobox/policy.json && echo planted`
	msg := ceilingErr(s, "exec_command", map[string]any{"command": bash(script), "mounts": []map[string]any{{"hostPath": cfg, "sandboxPath": "/mnt/c", "mode": "rw"}}})
	if !strings.Contains(msg, "read-write, holds "+cfg+"/autobox") || !strings.Contains(msg, "no call may mount") {
		t.Errorf("rw mount of %s: %q, want it refused", cfg, msg)
	}
	if _, err := os.Stat(filepath.Join(cfg, "autobox/policy.json")); err == nil {
		t.Errorf("a call wrote a ceiling file")
	}
	if o, isErr := s.exec(map[string]any{"command": []string{"ls", "-a", "/mnt/c"}, "mounts": []map[string]any{{"hostPath": cfg, "sandboxPath": "/mnt/c", "mode": "ro"}}}); isErr || o.code() != 0 {
		t.Errorf("ro mount of %s: %+v", cfg, o)
	}
}

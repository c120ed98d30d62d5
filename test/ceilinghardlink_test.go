package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCeilingFileHardLinked: a ceiling file with another name (a hard link:
// a dotfiles directory, a backup) could be rewritten by a call with rw on the
// directory holding that other name, which no never-mount rule names: the
// write lands in the ceiling file's own inode, and the running server reads
// it within a second. A ceiling file with more than one name is refused: a
// server does not start on it, and a running server keeps the ceiling it read
// when the file gains one, saying why in its log. Positive controls: the file
// with one name starts a server, and the write that reaches it lifts nothing.
func TestCeilingFileHardLinked(t *testing.T) {
	requireSandbox(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, ".config")
	dots := filepath.Join(home, "dots")
	for _, d := range []string{filepath.Join(cfg, "autobox"), dots} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A root server without namespaces runs commands as uid 65534.
	os.Chmod(home, 0o755)
	os.Chmod(dots, 0o777)
	policy := filepath.Join(cfg, "autobox/policy.json")
	writeFile(t, policy, `{"allowNetwork": false}`)
	os.Chmod(policy, 0o666)
	env := []string{"XDG_CONFIG_HOME=" + cfg}

	// A running server, and the file gains a second name.
	s := startEnv(t, env)
	if msg := ceilingErr(s, "exec_command", map[string]any{"command": []string{"true"}, "allowNetwork": true}); !strings.Contains(msg, "allowNetwork") {
		t.Fatalf("the ceiling is not in force: %q", msg)
	}
	if err := os.Link(policy, filepath.Join(dots, "policy.json")); err != nil {
		t.Fatal(err)
	}
	rw := []map[string]any{{"hostPath": dots, "sandboxPath": "/mnt/d", "mode": "rw"}}
	if o, isErr := s.exec(map[string]any{"command": bash(`printf '{}' > /mnt/d/policy.json && echo rewritten`), "mounts": rw}); isErr || o.Stdout != "rewritten\n" {
		t.Fatalf("the write through the other name: %+v", o)
	}
	if b, _ := os.ReadFile(policy); string(b) != "{}" {
		t.Fatalf("the write did not reach the ceiling file: %q", b)
	}
	// The server looks at its file at most once a second: a call after that
	// makes it read the file again.
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(s.stderr.String(), "has 2 names (hard links)"); time.Sleep(100 * time.Millisecond) {
		var o map[string]any
		s.call("exec_command", map[string]any{"command": []string{"true"}}, &o)
		if time.Now().After(deadline) {
			t.Fatalf("no reload refused in the log:\n%s", s.stderr)
		}
	}
	if msg := ceilingErr(s, "exec_command", map[string]any{"command": []string{"true"}, "allowNetwork": true}); !strings.Contains(msg, "allowNetwork") {
		t.Errorf("the rewritten ceiling is in force: %q", msg)
	}

	// A new server does not start on it, naming the problem.
	run := func() ([]byte, error) {
		cmd := exec.Command(bin, "exec", "--", "true")
		cmd.Env = append([]string{"HOME=" + home, "PATH=/usr/bin:/bin", "AUTOBOX_STATE_DIR=" + filepath.Join(home, "state")}, env...)
		return cmd.CombinedOutput()
	}
	if out, err := run(); err == nil || !strings.Contains(string(out), "has 2 names (hard links)") {
		t.Errorf("a command line on a hard-linked ceiling file (%v):\n%s", err, out)
	}
	// Positive control: one name again.
	os.Remove(filepath.Join(dots, "policy.json"))
	if out, err := run(); err != nil {
		t.Errorf("a command line on a ceiling file of one name (%v):\n%s", err, out)
	}
}

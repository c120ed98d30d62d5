package test

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCeilingFileNamedMissing (issue 32, item 4): a ceiling file named with
// --policy that does not exist stops autobox serve (and autobox policy) with
// an error naming it, instead of serving with every rule open. The controls:
// the same flag naming a file that exists, and no flag with no file at the
// default path, both start.
func TestCeilingFileNamedMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "polcy.json") // a typo
	for _, args := range [][]string{{"serve", "--policy", missing}, {"policy", "--policy", missing}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput() // serve reads no stdin: it stops before it serves
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(string(out), "--policy "+missing+": no such file") {
			t.Errorf("autobox %s: want it stopped with the missing file named, got %v:\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Controls: a named file that exists, and the default path absent (HOME
	// has no .config): both serve.
	s := start(t, "serve", "--policy", writePolicy(t, `{}`))
	if o, _ := s.js(map[string]any{"code": "6 * 7"}); !o.OK {
		t.Errorf("with a named ceiling file: %+v", o)
	}
	s = start(t, "serve")
	if o, _ := s.js(map[string]any{"code": "6 * 7"}); !o.OK {
		t.Errorf("with no ceiling file at the default path: %+v", o)
	}
}

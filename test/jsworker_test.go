//go:build linux

package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/autobox-dev/autobox/jail"
)

// TestJSWorkerJailInResults: every execute_js result names the jail its worker ran
// in, over MCP and on the command line, and doctor names the same and the V8 the
// binary links, in each mode this process can make: the host's (a user and pid
// namespace of its own per worker, as root and as an ordinary user), namespaces
// turned off, and a host that refuses user namespaces (a seccomp filter that
// refuses CLONE_NEWUSER to the server), where workers run landlock-only and both
// say why.
func TestJSWorkerJailInResults(t *testing.T) {
	requireSandbox(t)
	host := jail.ModeLandlock
	switch {
	case os.Geteuid() == 0:
		host = jail.ModeRoot
	case hostMode() == jail.ModeUserNS:
		host = jail.ModeUserNS
	}
	probe := filepath.Join(toolsDir, "probe")
	modes := []struct {
		name   string
		env    []string
		prefix []string
		want   string
		why    string
	}{
		{name: "host", want: host},
		{name: "namespaces off", env: []string{jail.NoNamespacesEnv + "=1"}, want: jail.ModeLandlock, why: jail.NoNamespacesEnv + "=1 turned them off"},
		{name: "user namespaces refused", prefix: []string{probe, "nouserns"}, want: jail.ModeLandlock, why: "the kernel refused a user and pid namespace"},
	}
	version := regexp.MustCompile(`\bv8 +V8 \d+\.\d+\.\d+\.\d+\S*, through v8go v\d+\.\d+\.\d+`)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			var s *session
			if m.prefix != nil {
				s = startArgv(t, m.env, append(append([]string{}, m.prefix...), bin))
			} else {
				s = startEnv(t, m.env)
			}
			var o struct {
				OK        bool   `json:"ok"`
				Isolation string `json:"isolation"`
			}
			if s.call("execute_js", map[string]any{"code": "1 + 1"}, &o); !o.OK || o.Isolation != m.want {
				t.Errorf("execute_js over MCP: %+v, want isolation %q", o, m.want)
			}
			run := func(args ...string) []byte {
				argv := append(append(append([]string{}, m.prefix...), bin), args...)
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = append(os.Environ(), m.env...)
				out, _ := cmd.CombinedOutput()
				return out
			}
			out := run("js", "--json", "-e", "1 + 1")
			var cli struct {
				OK        bool   `json:"ok"`
				Isolation string `json:"isolation"`
			}
			if err := json.Unmarshal(out, &cli); err != nil || !cli.OK || cli.Isolation != m.want {
				t.Errorf("autobox js --json: %s, want isolation %q", out, m.want)
			}
			doctor := string(run("doctor"))
			if !version.MatchString(doctor) {
				t.Errorf("doctor does not name the linked V8:\n%s", doctor)
			}
			jailLine := ""
			for _, l := range strings.Split(doctor, "\n") {
				if strings.Contains(l, " js worker jail ") {
					jailLine = l
				}
			}
			switch {
			case jailLine == "":
				t.Errorf("doctor has no js worker jail line:\n%s", doctor)
			case m.want == jail.ModeLandlock && (!strings.HasPrefix(jailLine, "info") || !strings.Contains(jailLine, "no user and pid namespace of their own") || (m.why != "" && !strings.Contains(jailLine, m.why))):
				t.Errorf("doctor, workers without namespaces: %s", jailLine)
			case m.want != jail.ModeLandlock && (!strings.HasPrefix(jailLine, "ok") || !strings.Contains(jailLine, "a user and pid namespace of its own ("+m.want+")")):
				t.Errorf("doctor, workers with namespaces: %s", jailLine)
			}
		})
	}
}

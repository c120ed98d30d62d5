//go:build linux

package test

import (
	"regexp"
	"strings"
	"testing"
)

// Flags that messages name exist where they are suggested (issue 35 item 7).
// The refusals of the tools reach the MCP server and every command of the
// command line; a flag named bare is suggested for the command that printed
// it, and one named with its command ("autobox serve --lift-never-mount") for
// that command. Before, `autobox js` and `autobox exec` were told to pass
// --lift-never-mount, which only serve takes.

var (
	flagToken  = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	helpFlag   = regexp.MustCompile(`(?m)^\s+--?([a-z][a-z0-9-]*)`)
	namedByCmd = regexp.MustCompile(`autobox ([a-z]+)(?: ([a-z]+))? (?:with )?$`)
)

// commandFlags are the flags each command lists in its help: `autobox help`
// for serve (its serve and ceiling flags), `--help` for the others.
func commandFlags(t *testing.T, h *cliHome) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for _, cmd := range [][]string{{"serve"}, {"js"}, {"exec"}, {"ws", "create"}, {"batch"}, {"session"}, {"doctor"}, {"task"}} {
		args := append(append([]string{}, cmd...), "--help")
		if cmd[0] == "serve" {
			args = []string{"help"}
		}
		r := h.run("", args...)
		flags := map[string]bool{"help": true}
		re := helpFlag
		if cmd[0] == "serve" {
			re = flagToken // the usage text lists serve's flags within its lines
		}
		for _, m := range re.FindAllStringSubmatch(r.stdout, -1) {
			flags[m[1]] = true
		}
		if len(flags) < 2 && cmd[0] != "doctor" && cmd[0] != "session" {
			t.Fatalf("no flags in the help of %s: %s", strings.Join(cmd, " "), r)
		}
		out[strings.Join(cmd, " ")] = flags
	}
	return out
}

// checkFlagsNamed fails for every flag msg names that the command it is
// suggested for does not take; cmd printed msg.
func checkFlagsNamed(t *testing.T, flags map[string]map[string]bool, cmd, msg string) int {
	t.Helper()
	n := 0
	foreign := foreignCommands(msg)
	for _, loc := range flagToken.FindAllStringSubmatchIndex(msg, -1) {
		if foreign(loc[0]) {
			continue // another program's flag: `systemd-run --user …`
		}
		name := msg[loc[2]:loc[3]]
		start := loc[0] - 30
		if start < 0 {
			start = 0
		}
		for_ := cmd
		if m := namedByCmd.FindStringSubmatch(msg[start:loc[0]]); m != nil {
			for_ = m[1]
			if m[2] != "" && flags[m[1]+" "+m[2]] != nil {
				for_ = m[1] + " " + m[2]
			}
		}
		n++
		if fs, ok := flags[for_]; !ok || !fs[name] {
			t.Errorf("%s prints a message that names --%s for %q, which does not take it:\n%s", cmd, name, for_, msg)
		}
	}
	return n
}

// TestMessageFlagsExist: the message table: each refusal that names a flag,
// as each command prints it, and the commands' own texts that suggest flags.
func TestMessageFlagsExist(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	flags := commandFlags(t, h)
	named := 0
	// The never-mountable defaults' refusal, which says how the user lifts
	// them, through every tool and command.
	mountRoot := `{"id": 1, "tool": "exec_command", "arguments": {"command": ["true"], "mounts": [{"hostPath": "/", "sandboxPath": "/mnt/r"}]}}`
	for _, c := range []struct {
		cmd   string
		stdin string
		args  []string
		want  string // in the output: the refusal the row is about
	}{
		{"exec", "", []string{"exec", "--mount", "/:/mnt/r", "--", "true"}, "liftNeverMount"},
		{"js", "", []string{"js", "--mount", "/:/mnt/r", "-e", "1"}, "liftNeverMount"},
		{"ws create", "", []string{"ws", "create", "--copy-mode", "auto", "/", "/mnt/r"}, "liftNeverMount"},
		{"batch", mountRoot + "\n", []string{"batch"}, "liftNeverMount"},
		{"exec", "", []string{"exec", "--network", "--allow-host", "example.com", "--", "true"}, "give one"},
		{"doctor", "", []string{"doctor"}, "exec_command"},
	} {
		r := h.run(c.stdin, c.args...)
		if !strings.Contains(r.stdout+r.stderr, c.want) {
			t.Errorf("%s: not the text the table expects (%s): %s", strings.Join(c.args, " "), c.want, r)
		}
		named += checkFlagsNamed(t, flags, c.cmd, r.stdout+r.stderr)
	}
	// Over MCP: the server's own flags are named with it.
	s := start(t)
	msg := ceilingErr(s, "exec_command", map[string]any{"command": []string{"true"}, "mounts": []map[string]any{{"hostPath": "/", "sandboxPath": "/mnt/r"}}})
	named += checkFlagsNamed(t, flags, "serve", msg)
	// A native task harness, through the task command.
	e := newTaskEnv(t, taskUsers(t)[0])
	_, out := e.autobox("run", "--kind", "native", "--ro", "/", "--", "true")
	if !strings.Contains(out, "liftNeverMount") {
		t.Errorf("task run --ro /: %s", out)
	}
	named += checkFlagsNamed(t, flags, "task", out)
	// Positive control: the table names flags (and the check sees them).
	if named < 6 {
		t.Errorf("only %d flags named in the whole table", named)
	}
}

// foreignCommands reports, for an offset of msg, whether it is inside a
// command line quoted in backquotes that runs another program than autobox.
func foreignCommands(msg string) func(int) bool {
	var spans [][2]int
	for i := 0; ; {
		a := strings.IndexByte(msg[i:], '`')
		if a < 0 {
			break
		}
		b := strings.IndexByte(msg[i+a+1:], '`')
		if b < 0 {
			break
		}
		start, end := i+a+1, i+a+1+b
		if !strings.HasPrefix(msg[start:end], "autobox ") {
			spans = append(spans, [2]int{start, end})
		}
		i = end + 1
	}
	return func(at int) bool {
		for _, s := range spans {
			if at >= s[0] && at < s[1] {
				return true
			}
		}
		return false
	}
}

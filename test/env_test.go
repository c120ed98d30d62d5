//go:build linux

package test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestExecEnv: a call's env reaches the command (one-shot, session, tty),
// replaces a default, extends PATH through $PATH and names its mount as given
// (rewritten to the host path where there is no private root); the variables the sandbox works through cannot be set, and a
// refusal names the variable.
func TestExecEnv(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	dir := t.TempDir()
	writeFile(t, dir+"/bin/hello-tool", "#!/bin/sh\necho hello from the toolchain\n")
	chmodX(t, dir+"/bin/hello-tool")
	mounts := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/tc", "mode": "ro"}}
	env := []string{"CI=0", "CI=1", "NODE_ENV=test", "NO_COLOR=", "PATH=/mnt/tc/bin:$PATH", "TOOL_DIR=/mnt/tc/bin"}
	// With a private root the mount is at its sandboxPath and the value stays
	// as given; without one it is rewritten to the host path.
	toolDir := "/mnt/tc/bin"
	if !namespaced() {
		toolDir = dir + "/bin"
	}
	script := `echo "CI=$CI NODE_ENV=$NODE_ENV NO_COLOR=[$NO_COLOR] HOME_SET=${HOME:+yes}"; hello-tool; test "$TOOL_DIR" = "` + toolDir + `" && echo rewritten; env | grep -c '^NO_COLOR='`
	want := "CI=1 NODE_ENV=test NO_COLOR=[] HOME_SET=yes\nhello from the toolchain\nrewritten\n1\n"
	o, isErr := s.exec(map[string]any{"command": bash(script), "env": env, "mounts": mounts})
	if isErr || o.code() != 0 || o.Stdout != want {
		t.Errorf("one-shot: %+v (tool error %v)", o, isErr)
	}
	// Positive control: without env, the defaults.
	o, _ = s.exec(map[string]any{"command": bash(`echo "CI=[$CI] NO_COLOR=$NO_COLOR"`)})
	if o.Stdout != "CI=[] NO_COLOR=1\n" {
		t.Errorf("defaults: %+v", o)
	}
	// A session gets it too, and a terminal session keeps the call's TERM.
	var so sessOut
	s.call("exec_command", map[string]any{"command": bash(`echo "CI=$CI TERM=$TERM"`), "env": []string{"CI=1", "TERM=vt100"}, "yieldMs": 5000, "tty": true}, &so)
	if !strings.Contains(so.Stdout, "CI=1 TERM=vt100") {
		t.Errorf("tty session: %+v", so)
	}

	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"CI=1", "HOME=/tmp"}, "env[1]: HOME cannot be set: it is the call's scratch dir"},
		{[]string{"TMPDIR=/tmp"}, "env[0]: TMPDIR cannot be set"},
		{[]string{"HTTP_PROXY=http://evil:1"}, "env[0]: HTTP_PROXY cannot be set: it points the command at autobox's network proxy"},
		{[]string{"https_proxy=http://evil:1"}, "https_proxy cannot be set"},
		{[]string{"NO_PROXY=*"}, "NO_PROXY cannot be set"},
		{[]string{"AUTOBOX_STATE_DIR=/x"}, "AUTOBOX_STATE_DIR cannot be set"},
		{[]string{"1BAD=x"}, `1BAD\" is not a variable name`},
		{[]string{"CI"}, `each entry is NAME=VALUE`},
		{[]string{"A=x\x00y"}, "the value of A contains a NUL byte"},
	} {
		res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "env": c.env})
		if !res.IsError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("env %v: want a refusal with %q, got %s", c.env, c.want, textOf(res))
		}
	}
}

// TestExecEnvObject: env as an object, the form MCP client configs use, means
// what the list means, over MCP and in a batch line; a value that is not text
// is refused naming it.
func TestExecEnvObject(t *testing.T) {
	requireSandbox(t)
	// A batch line, decoded by the layer MCP calls are.
	h := newCLIHome(t)
	r := h.run(`{"id": 1, "tool": "exec_command", "arguments": {"command": ["sh", "-c", "echo $CI"], "env": {"CI": "yes"}}}`+"\n", "batch")
	if !strings.Contains(r.stdout, `"stdout":"yes\n"`) {
		t.Errorf("a batch line with env as an object: %s", r)
	}
	s := start(t)
	script := `echo "CI=$CI NODE_ENV=$NODE_ENV N=$N"; echo "$PATH"`
	list, isErr := s.exec(map[string]any{"command": bash(script), "env": []string{"CI=1", "NODE_ENV=test", "N=3", "PATH=/opt/x:$PATH"}})
	if isErr || list.code() != 0 || !strings.HasPrefix(list.Stdout, "CI=1 NODE_ENV=test N=3\n/opt/x:/usr/local/bin:") {
		t.Fatalf("the list form: %+v", list)
	}
	obj, isErr := s.exec(map[string]any{"command": bash(script), "env": map[string]any{"CI": "1", "NODE_ENV": "test", "N": 3, "PATH": "/opt/x:$PATH"}})
	if isErr || obj.code() != 0 || obj.Stdout != list.Stdout {
		t.Errorf("the object form: %+v, want the list form's stdout %q", obj, list.Stdout)
	}
	res := s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "env": map[string]any{"CI": []string{"1"}}})
	if !res.IsError || !strings.Contains(textOf(res), "invalid arguments: env: CI: want a string, got array") {
		t.Errorf("an object member that is a list: %s", textOf(res))
	}
	res = s.callRaw("exec_command", map[string]any{"command": []string{"true"}, "env": map[string]any{"HOME": "/"}})
	if !res.IsError || !strings.Contains(textOf(res), "HOME cannot be set") {
		t.Errorf("a reserved name in the object form: %s", textOf(res))
	}
}

// TestExecEnvProxy: with allowHosts the proxy variables are the sandbox's,
// whatever else the call sets.
func TestExecEnvProxy(t *testing.T) {
	f := newNetFixture(t)
	_ = f
	s := start(t)
	o, isErr := s.exec(map[string]any{"command": bash(`echo "$HTTP_PROXY $CI $NODE_USE_ENV_PROXY"`), "allowHosts": []string{"web.test"}, "env": []string{"CI=1"}})
	if isErr || !strings.HasPrefix(o.Stdout, "http://127.0.0.1:") || !strings.HasSuffix(o.Stdout, " 1 1\n") {
		t.Errorf("proxy variables with env: %+v", o)
	}
}

// TestCLIExecEnv: --env NAME=VALUE and --env NAME (the caller's value), and a
// refusal in the flag's words.
func TestCLIExecEnv(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	h.env = append(h.env, "MY_TOKEN=from-host")
	h.want(h.run("", "exec", "--env", "CI=1", "--env", "MY_TOKEN", "--env", "PATH=/opt/none:$PATH", "--", "sh", "-c", `echo "$CI $MY_TOKEN $PATH"`), 0, "1 from-host /opt/none:/usr/local/bin:", "")
	h.want(h.run("", "exec", "--env", "NOT_SET_ANYWHERE_9", "true"), 2, "", "NOT_SET_ANYWHERE_9 is not set in your environment")
	h.want(h.run("", "exec", "--env", "HOME=/", "true"), 125, "", "--env #1: HOME cannot be set")
	// A session started from the command line gets it as well.
	h.sessions = true
	r := h.run("", "exec", "--yield", "0", "--env", "CI=yes", "--", "sh", "-c", "sleep 0.5; echo CI=$CI")
	id := strings.TrimSpace(r.stdout)
	out := ""
	for i := 0; i < 10; i++ {
		r = h.run("", "session", "poll", "--json", "--yield", "5s", id)
		var o sessOut
		json.Unmarshal([]byte(r.stdout), &o)
		if out += o.Stdout; !o.Running {
			break
		}
	}
	if out != "CI=yes\n" {
		t.Errorf("a session's env: %q, then %s", out, r)
	}
	waitSessionServerGone(t)
}

func chmodX(t *testing.T, path string) {
	t.Helper()
	if err := os.Chmod(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

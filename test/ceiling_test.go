package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The user's ceiling (package ceiling): never-mountable paths for every tool,
// the ceiling file's rules, its flags, and the command line. Each refusal has a
// positive control, and a refused call leaves no trace of having run.

// ceilingErr is the error text of a refused call of any tool.
func ceilingErr(s *session, tool string, args map[string]any) string {
	s.t.Helper()
	var o struct {
		Error  any    `json:"error"`
		Stderr string `json:"stderr"`
	}
	if !s.call(tool, args, &o) {
		s.t.Errorf("%s %v: not refused", tool, args)
	}
	msg, _ := o.Error.(string)
	return msg
}

// TestCeilingNeverMountDefaults: a mount of /, which holds the user's secrets
// directories, and a mount of autobox's own state dir are refused by every tool
// that takes a host path, with no ceiling file at all; an ordinary directory
// works in each.
func TestCeilingNeverMountDefaults(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "mine")
	root := []map[string]any{{"hostPath": "/", "sandboxPath": "/mnt/root", "mode": "ro"}}
	state := []map[string]any{{"hostPath": s.state, "sandboxPath": "/mnt/state", "mode": "ro"}}
	mine := []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/d", "mode": "ro"}}

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"execute_js", map[string]any{"code": `host.listDir("/mnt/root")`, "mounts": root}, `mounts[0].hostPath / holds`},
		{"execute_js", map[string]any{"code": `host.listDir("/mnt/state")`, "mounts": state}, "overlaps autobox"},
		{"exec_command", map[string]any{"command": []string{"ls", "/mnt/root"}, "mounts": root}, `mounts[0].hostPath / holds`},
		{"exec_command", map[string]any{"command": []string{"ls", "/mnt/state"}, "mounts": state}, "overlaps autobox"},
		{"copy_then_sync", map[string]any{"action": "create", "hostPath": "/", "sandboxPath": "/mnt/p", "copyMode": "auto"}, "hostPath / holds"},
		{"copy_then_sync", map[string]any{"action": "create", "hostPath": dir, "sandboxPath": "/mnt/p", "copyMode": "auto", "storagePath": s.state}, "state directory"},
	} {
		msg := ceilingErr(s, c.tool, c.args)
		// The state dir is the store's to refuse first, which it does, naming it.
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "neverMount") && c.want != "overlaps autobox" && c.want != "state directory" {
			t.Errorf("%s %v: %q, want %q and the rule", c.tool, c.args, msg, c.want)
		}
		if strings.Contains(msg, " holds ") && !strings.Contains(msg, "liftNeverMount") {
			t.Errorf("%s: the refusal does not say how the user lifts the default: %s", c.tool, msg)
		}
	}
	// Positive controls: the same calls with a directory of the user's own.
	if o := s.mustJS(map[string]any{"code": `host.readFile("/mnt/d/f")`, "mounts": mine}); string(o.Result) != `"mine"` {
		t.Errorf("execute_js positive control: %s", o.Result)
	}
	if o, _ := s.exec(map[string]any{"command": []string{"cat", "/mnt/d/f"}, "mounts": mine}); o.Stdout != "mine" {
		t.Errorf("exec_command positive control: %+v", o)
	}
	if o, isErr := s.ws(map[string]any{"action": "create", "hostPath": dir, "sandboxPath": "/mnt/p", "copyMode": "auto"}); isErr || !o.OK {
		t.Errorf("copy_then_sync create positive control: %+v", o)
	}
	// A read-only mount of a directory holding the state dir stays allowed (the
	// store's own rule says the same); read-write it is refused.
	parent := filepath.Dir(s.state)
	if o, _ := s.js(map[string]any{"code": `1`, "mounts": []map[string]any{{"hostPath": parent, "sandboxPath": "/mnt/h"}}}); !o.OK {
		t.Errorf("read-only mount holding the state dir: %s", o.err())
	}
}

// TestCeilingNeverMountFlag: the user's own never-mountable path, for each tool,
// below it and above it; a sibling works.
func TestCeilingNeverMountFlag(t *testing.T) {
	requireSandbox(t)
	base := t.TempDir()
	secret := filepath.Join(base, "secret")
	inner := filepath.Join(secret, "inner")
	sibling := filepath.Join(base, "sibling")
	for _, d := range []string{inner, sibling} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(secret, "key"), "s3cret")
	writeFile(t, filepath.Join(sibling, "f"), "ok")
	s := start(t, "serve", "--never-mount", secret)
	for _, p := range []string{secret, inner, base} {
		mounts := []map[string]any{{"hostPath": p, "sandboxPath": "/mnt/x", "mode": "ro"}}
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"execute_js", map[string]any{"code": `host.listDir("/mnt/x")`, "mounts": mounts}},
			{"exec_command", map[string]any{"command": []string{"ls", "-R", "/mnt/x"}, "mounts": mounts}},
			{"copy_then_sync", map[string]any{"action": "create", "hostPath": p, "sandboxPath": "/mnt/x", "copyMode": "auto"}},
		} {
			msg := ceilingErr(s, c.tool, c.args)
			if !strings.Contains(msg, secret) || !strings.Contains(msg, "--never-mount") && !strings.Contains(msg, "neverMount") {
				t.Errorf("%s of %s: %q", c.tool, p, msg)
			}
		}
	}
	// A workspace's storage inside it: refused too (autobox would write there).
	if msg := ceilingErr(s, "copy_then_sync", map[string]any{"action": "create", "hostPath": sibling, "sandboxPath": "/mnt/x", "copyMode": "auto", "storagePath": filepath.Join(secret, "ws")}); !strings.Contains(msg, "storagePath") || !strings.Contains(msg, secret) {
		t.Errorf("storagePath inside it: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(secret, "ws")); err == nil {
		t.Error("the refused create made its storage")
	}
	mounts := []map[string]any{{"hostPath": sibling, "sandboxPath": "/mnt/x", "mode": "rw"}}
	if o := s.mustJS(map[string]any{"code": `host.readFile("/mnt/x/f")`, "mounts": mounts}); string(o.Result) != `"ok"` {
		t.Errorf("execute_js positive control: %s", o.Result)
	}
	if o, _ := s.exec(map[string]any{"command": []string{"cat", "/mnt/x/f"}, "mounts": mounts}); o.Stdout != "ok" {
		t.Errorf("exec_command positive control: %+v", o)
	}
	if o, isErr := s.ws(map[string]any{"action": "create", "hostPath": sibling, "sandboxPath": "/mnt/x", "copyMode": "auto"}); isErr || !o.OK {
		t.Errorf("copy_then_sync positive control: %+v", o)
	}
}

// writePolicy writes a ceiling file in a directory of the test's and returns its path.
func writePolicy(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.json")
	writeFile(t, path, text)
	return path
}

// TestCeilingFile: each rule of a ceiling file, beyond (refused, naming the rule
// and the file, and nothing ran) and within (runs).
func TestCeilingFile(t *testing.T) {
	requireSandbox(t)
	allowed := t.TempDir()
	other := t.TempDir()
	policy := writePolicy(t, `{"mounts": [{"path": "`+allowed+`", "mode": "ro"}, {"path": "`+other+`/rw", "mode": "rw"}],
  "allowHosts": ["example.com"], "limits": {"timeoutMs": 3000, "memoryMb": 128, "maxProcesses": 64, "maxWriteMb": 10}}`)
	os.Mkdir(filepath.Join(other, "rw"), 0o777)
	s := start(t, "serve", "--policy", policy)
	touch := func(dir, mode string) map[string]any {
		return map[string]any{"command": []string{"sh", "-c", "touch /mnt/a/ran"}, "mounts": []map[string]any{{"hostPath": dir, "sandboxPath": "/mnt/a", "mode": mode}}}
	}
	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"rw where ro is the ceiling", touch(allowed, "rw"), `"mounts" rule`},
		{"outside the mounts", touch(other, "rw"), `"mounts" rule`},
		{"the whole network", map[string]any{"command": []string{"true"}, "allowNetwork": true}, `"allowNetwork" rule`},
		{"a host not listed", map[string]any{"command": []string{"true"}, "allowHosts": []string{"other.test"}}, `"allowHosts" rule`},
		{"timeoutMs", map[string]any{"command": []string{"true"}, "timeoutMs": 5000}, `"limits.timeoutMs" rule`},
		{"memoryMb", map[string]any{"command": []string{"true"}, "memoryMb": 256}, `"limits.memoryMb" rule`},
		{"maxProcesses", map[string]any{"command": []string{"true"}, "maxProcesses": 65}, `"limits.maxProcesses" rule`},
		{"maxWriteMb", map[string]any{"command": []string{"true"}, "maxWriteMb": 11}, `"limits.maxWriteMb" rule`},
		{"a session's timeoutMs", map[string]any{"command": []string{"true"}, "yieldMs": 100, "timeoutMs": 60000}, `"limits.timeoutMs" rule`},
	} {
		msg := ceilingErr(s, "exec_command", c.args)
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, policy) || !strings.Contains(msg, "was not asked") {
			t.Errorf("%s: %q, want %q and the file", c.name, msg, c.want)
		}
	}
	for _, d := range []string{allowed, other} {
		if _, err := os.Stat(filepath.Join(d, "ran")); err == nil {
			t.Errorf("a refused call ran: %s/ran exists", d)
		}
	}
	// Within: ro below the ro entry, rw below the rw entry, limits at the
	// ceiling, and defaults above it lowered to it (maxProcesses 256, maxWriteMb 1024).
	if o, _ := s.exec(map[string]any{"command": []string{"ls", "/mnt/a"}, "mounts": []map[string]any{{"hostPath": allowed, "sandboxPath": "/mnt/a"}}, "timeoutMs": 3000, "memoryMb": 128}); o.code() != 0 {
		t.Errorf("ro within the ceiling: %+v", o)
	}
	if o, _ := s.exec(touch(filepath.Join(other, "rw"), "rw")); o.code() != 0 {
		t.Errorf("rw within the ceiling: %+v", o)
	}
	// execute_js: the same rules.
	if msg := ceilingErr(s, "execute_js", map[string]any{"code": "1", "allowHosts": []string{"other.test"}}); !strings.Contains(msg, `"allowHosts" rule`) {
		t.Errorf("execute_js allowHosts: %q", msg)
	}
	if msg := ceilingErr(s, "execute_js", map[string]any{"code": "1", "timeoutMs": 4000}); !strings.Contains(msg, `"limits.timeoutMs" rule`) {
		t.Errorf("execute_js timeoutMs: %q", msg)
	}
	if msg := ceilingErr(s, "execute_js", map[string]any{"code": "1", "maxWriteBytes": 20 << 20}); !strings.Contains(msg, `"limits.maxWriteMb" rule`) {
		t.Errorf("execute_js maxWriteBytes: %q", msg)
	}
	if o, _ := s.js(map[string]any{"code": "1", "allowHosts": []string{"example.com"}}); !o.OK {
		t.Errorf("execute_js within: %s", o.err())
	}
	// copy_then_sync create: its hostPath is written by sync, so it needs rw.
	if msg := ceilingErr(s, "copy_then_sync", map[string]any{"action": "create", "hostPath": allowed, "sandboxPath": "/mnt/p", "copyMode": "auto"}); !strings.Contains(msg, `"mounts" rule`) {
		t.Errorf("create of a ro path: %q", msg)
	}
	if o, isErr := s.ws(map[string]any{"action": "create", "hostPath": filepath.Join(other, "rw"), "sandboxPath": "/mnt/p", "copyMode": "auto"}); isErr || !o.OK {
		t.Errorf("create within: %+v", o)
	}
}

// TestCeilingLowersDefaults: a limit a call leaves to its default runs at the
// ceiling where the default is above it, so no call runs with more than the
// ceiling; a call that names a limit within it gets that.
func TestCeilingLowersDefaults(t *testing.T) {
	requireSandbox(t)
	s := start(t, "serve", "--policy", writePolicy(t, `{"limits": {"timeoutMs": 1000, "maxWriteMb": 1}}`))
	o, _ := s.exec(map[string]any{"command": []string{"sleep", "5"}})
	// The note names the ceiling as the cap, and a session is held to it too.
	if !o.Killed || !strings.HasPrefix(o.Stderr, "killed: timeout after 1000ms, the most the user's ceiling allows (their ceiling file's \"limits.timeoutMs\", or autobox serve --max-timeout-ms)\n") {
		t.Errorf("exec_command's default timeoutMs (30000) above the ceiling: %+v", o)
	}
	o, _ = s.exec(map[string]any{"command": []string{"sleep", "5"}, "timeoutMs": 300})
	if !o.Killed || !strings.HasPrefix(o.Stderr, "killed: timeout after 300ms: raise timeoutMs (at most 1000, the most the user's ceiling allows") {
		t.Errorf("a timeoutMs below the ceiling: %+v", o)
	}
	// Held to 1 MB by either of the two enforcers of maxWriteMb: the kernel's
	// file size limit refuses the write (the shell says so), or the watchdog,
	// polling, finds more than 1 MB written first and kills the command.
	o, _ = s.exec(map[string]any{"command": []string{"sh", "-c", "head -c 2097152 /dev/zero > $HOME/big; echo $?"}})
	refused := o.code() == 0 && strings.TrimSpace(o.Stdout) != "0" && strings.Contains(o.Stderr, "File too large")
	killed := o.Killed && strings.HasPrefix(o.Stderr, "disk limit exceeded (") && strings.Contains(o.Stderr, "> maxWriteMb 1;")
	if !refused && !killed {
		t.Errorf("exec_command's default maxWriteMb (1024) above the ceiling: %+v", o)
	}
	// Positive control: within the ceiling, the same write of less.
	o, _ = s.exec(map[string]any{"command": []string{"sh", "-c", "head -c 524288 /dev/zero > $HOME/small; echo $?"}})
	if strings.TrimSpace(o.Stdout) != "0" {
		t.Errorf("a write within the ceiling: %+v", o)
	}
	if j, _ := s.js(map[string]any{"code": "while (true) {}"}); j.OK || !strings.Contains(j.err(), "execution exceeded 800ms") {
		t.Errorf("execute_js's default timeoutMs (800) is within the ceiling: %+v", j.err())
	}
	if j, _ := s.js(map[string]any{"code": "while (true) {}", "timeoutMs": 1000}); !strings.Contains(j.err(), "execution exceeded 1000ms: timeoutMs is at most 1000 here (the user's ceiling)") {
		t.Errorf("execute_js at the ceiling: %s", j.err())
	}
}

//go:build linux

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Keys of the JSON autobox reads from outside match exactly (issue 35 item 3):
// Go's encoding/json would take "MOUNTS" or "mountſ" (U+017F) for mounts and
// "allowNetworK" (U+212A) for allowNetwork, and the later of two equal keys,
// while a client's permission hook or a person reading the call sees no such
// grant. Each is refused, naming the key; the same call with exact keys runs.

// rawTool sends a tools/call with args as written and returns the result's
// structured content.
func (r *rawSession) rawTool(id int, tool, args string) map[string]any {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	m := r.reply(id)
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil {
		r.t.Fatalf("%s %s: no result object: %v", tool, args, m)
	}
	return sc
}

// secretDir is a directory holding a file "secret" that only a mount shows.
func secretDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	writeFile(t, filepath.Join(dir, "secret"), "s3cret")
	os.Chmod(filepath.Join(dir, "secret"), 0o644)
	return dir
}

func TestExactKeysMCP(t *testing.T) {
	requireSandbox(t)
	r := startRaw(t)
	dir := secretDir(t)
	mount := fmt.Sprintf(`[{"hostPath": %q, "sandboxPath": "/mnt/x"}]`, dir)
	cat := `"command": ["cat", "/mnt/x/secret"]`
	id := 10
	for _, c := range []struct{ args, key string }{
		{`{` + cat + `, "mounts": [], "MOUNTS": ` + mount + `}`, `"MOUNTS"`},
		{`{` + cat + `, "mount\u017f": ` + mount + `}`, `"mountſ"`},
		{`{` + cat + `, "mounts": [], "mounts": ` + mount + `}`, `"mounts" is given more than once`},
		{`{` + cat + `, "mounts": [{"hostPath": "/nonexistent", "sandboxPath": "/mnt/x", "hostPath": ` + fmt.Sprintf("%q", dir) + `}]}`, `mounts[0]: "hostPath" is given more than once`},
		{`{` + cat + `, "mounts": [{"hostPath": ` + fmt.Sprintf("%q", dir) + `, "sandboxPath": "/mnt/x", "MODE": "rw"}]}`, `mounts[0]: "MODE" is not a field`},
		{`{` + cat + `, "Command": ["true"]}`, `"Command" is not a parameter of exec_command`},
	} {
		id++
		o := r.rawTool(id, "exec_command", c.args)
		if o["stdout"] == "s3cret" || !strings.Contains(fmt.Sprint(o["error"]), c.key) {
			t.Errorf("%s: want a refusal naming %s, got %v", c.args, c.key, o)
		}
	}
	// The Kelvin sign in allowNetwork, for execute_js (whose fetch it would open).
	o := r.rawTool(30, "execute_js", `{"code": "1", "allowNetwor\u212a": true}`)
	if o["ok"] != false || !strings.Contains(fmt.Sprint(o["error"]), "\"allowNetwor\u212a\" is not a parameter of execute_js") || !strings.Contains(fmt.Sprint(o["error"]), `did you mean "allowNetwork"`) {
		t.Errorf("allowNetworK: %v", o)
	}
	// Positive controls: the same calls, keys exact.
	if o := r.rawTool(31, "exec_command", `{`+cat+`, "mounts": `+mount+`}`); o["stdout"] != "s3cret" {
		t.Errorf("exact keys: %v", o)
	}
	if o := r.rawTool(32, "execute_js", `{"code": "1 + 1", "allowNetwork": true}`); o["ok"] != true {
		t.Errorf("exact allowNetwork: %v", o)
	}
}

func TestExactKeysBatch(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	dir := secretDir(t)
	mount := fmt.Sprintf(`[{"hostPath": %q, "sandboxPath": "/mnt/x"}]`, dir)
	args := `{"command": ["cat", "/mnt/x/secret"], "mounts": ` + mount + `}`
	lines := []string{
		`{"id": 1, "tool": "exec_command", "arguments": {"command": ["true"]}, "Arguments": ` + args + `}`,
		`{"id": 2, "tool": "exec_command", "arguments": {"command": ["cat", "/mnt/x/secret"], "mounts": [], "MOUNTS": ` + mount + `}}`,
		`{"id": 3, "tool": "execute_js", "tool": "exec_command", "arguments": ` + args + `}`,
		`{"id": 4, "tool": "exec_command", "arguments": ` + args + `}`,
	}
	r := h.run(strings.Join(lines, "\n")+"\n", "batch")
	got := map[float64]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			id, _ := m["id"].(float64)
			got[id] = m
		}
	}
	for id, want := range map[float64]string{1: `"Arguments" is not "arguments"`, 2: `"MOUNTS" is not a parameter of exec_command`, 3: `"tool" appears more than once`} {
		if m := got[id]; m == nil || m["ok"] == true || !strings.Contains(fmt.Sprint(m["error"]), want) || strings.Contains(fmt.Sprint(m), "s3cret") {
			t.Errorf("line %v: want a refusal with %q, got %v", id, want, m)
		}
	}
	if m := got[4]; m == nil || !strings.Contains(fmt.Sprint(m["result"]), "s3cret") {
		t.Errorf("line 4, exact keys: %v (%s)", m, r)
	}
}

func TestExactKeysCeilingFile(t *testing.T) {
	h := newCLIHome(t)
	for text, key := range map[string]string{
		`{"allowNetwork": false, "ALLOWNETWORK": true}`:          `"ALLOWNETWORK" is not "allowNetwork"`,
		`{"allowNetwork": false, "allowNetwork": true}`:          `"allowNetwork" appears more than once`,
		`{"limits": {"maxWriteMb": 10, "maxWriteMB": 100000}}`:   `limits: key "maxWriteMB" is not "maxWriteMb"`,
		`{"neverMount": ["/srv"], "neverMount": []}`:             `"neverMount" appears more than once`,
		`{"alwaysReach": [], "alwaysReac\u0127": ["a.example"]}`: `unknown key "alwaysReacħ"`,
	} {
		r := h.run("", "policy", "--policy", writePolicy(t, text))
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, key) {
			t.Errorf("%s: want it refused naming %s; got %s", text, key, r)
		}
	}
	// Positive control.
	if r := h.run("", "policy", "--policy", writePolicy(t, `{"allowNetwork": false, "limits": {"maxWriteMb": 10}}`)); r.code != 0 {
		t.Errorf("exact keys: %s", r)
	}
}

//go:build linux

package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autobox-dev/autobox/jail"
)

// The client-conformance tests drive the binary with real MCP clients that nobody on
// this project wrote, pinned in clients/package.json and installed from its lock
// with `npm ci` (make test does it when npm is there; .ci/run always): the official
// TypeScript SDK client (clients/sdk.mjs) and the MCP Inspector's command line. The
// Go SDK client is the one every other end-to-end test uses.

// clientsDir is where the npm clients are installed.
const clientsDir = "clients"

// nodeClients returns the node binary, after checking that the pinned clients are
// installed as clients/package.json says. Without node or the clients the test
// skips, saying why; under CI (CI=1) it fails instead, so the suite cannot pass
// there without running.
func nodeClients(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if ci := os.Getenv("CI"); ci != "" && ci != "0" && ci != "false" {
			t.Fatalf("%s; CI=%s, where the client tests must run (.ci/run installs nodejs and npm and runs npm ci in test/clients)", why, ci)
		}
		t.Skip(why)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the TypeScript SDK and Inspector clients need it")
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(clientsDir, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(pkg.Dependencies)) {
		want := pkg.Dependencies[name]
		var installed struct{ Version string }
		err := readJSON(filepath.Join(clientsDir, "node_modules", name, "package.json"), &installed)
		switch {
		case err != nil:
			missing(fmt.Sprintf("the pinned clients are not installed (%s: %v): run npm ci in test/clients", name, err))
		case installed.Version != want:
			t.Fatalf("%s %s is installed, package.json pins %s: run npm ci in test/clients", name, installed.Version, want)
		}
		t.Logf("%s %s", name, installed.Version)
	}
	return node
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// nodeEnv is the environment of a node client: the server it starts gets a home,
// temp dir, state dir and data dir of the test's own. Node 18 (Debian 12's) gets
// the two globals later versions have by default and the Inspector uses.
func nodeEnv(t *testing.T, node string) (env []string, home string) {
	t.Helper()
	home = t.TempDir()
	tmp := filepath.Join(home, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env = []string{
		"PATH=" + filepath.Dir(node) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"AUTOBOX_STATE_DIR=" + filepath.Join(home, "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
	}
	if nodeMajor(t, node) < 19 {
		env = append(env, "NODE_OPTIONS=--experimental-global-customevent --experimental-global-webcrypto")
	}
	return env, home
}

// nodeMajor is the major version of node.
func nodeMajor(t *testing.T, node string) int {
	t.Helper()
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	major, _ := strconv.Atoi(strings.Split(strings.TrimSpace(string(out)), ".")[0])
	t.Logf("node %s", strings.TrimSpace(string(out)))
	return major
}

// sdkCases are the cases clients/sdk.mjs must report: one per result shape.
var sdkCases = []string{
	"initialize", "ping", "tools/list",
	"execute_js ok", "execute_js result values", "execute_js logs", "execute_js thrown error", "execute_js timeout",
	"execute_js memory kill", "execute_js bridge", "execute_js invalid arguments",
	"exec_command ok", "exec_command non-zero exit", "exec_command signal", "exec_command spawn failure",
	"exec_command timeout", "exec_command memory kill", "exec_command truncated output", "exec_command non-UTF-8 output",
	"exec_command env as an object", "notes on limits and mounts", "the host's port at the command's localhost", "exec_command mounts and cwd", "exec_command invalid arguments",
	"exec_command session", "exec_session write, signal, list, close", "exec_session tty", "exec_session invalid arguments",
	"copy_then_sync lifecycle", "copy_then_sync conflicts", "copy_then_sync invalid arguments", "dev server session ports",
	"progress token", "progress of a running command", "cancel execute_js with AbortSignal", "cancel exec_command with AbortSignal", "oversized request",
}

// canSandbox tells whether this host can run exec_command (see requireSandbox).
func canSandbox() bool {
	return jail.Probe().Check(nil) == nil || jail.Probe().LandlockABI >= jail.MinLandlockABI
}

// TestTypeScriptSDKClient runs clients/sdk.mjs: the official TypeScript SDK client
// lists the tools and calls each with valid and invalid arguments, provoking every
// result shape, with its own validation of each result against the output schema;
// cancellation by AbortSignal, a progress token, ping, and a request over the size
// limit. Each case of the script is a subtest here.
func TestTypeScriptSDKClient(t *testing.T) {
	node := nodeClients(t)
	env, home := nodeEnv(t, node)
	fixtures := filepath.Join(home, "fixtures")
	if err := os.Mkdir(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	canExec := "0"
	if canSandbox() {
		canExec = "1"
	}
	env = append(env, "AUTOBOX_BIN="+bin, "AUTOBOX_FIXTURES="+fixtures, "AUTOBOX_PROBE="+toolsDir, "AUTOBOX_CAN_EXEC="+canExec)
	seen := runCases(t, node, env, "sdk.mjs")
	for _, c := range sdkCases {
		if !seen[c] {
			t.Errorf("sdk.mjs reported no case %q", c)
		}
	}
}

// runCases runs a node script of test/clients that prints one JSON line per case
// ({"case", "status", "detail"}) and then {"done": true, …}; each case is a
// subtest. It returns the cases seen.
func runCases(t *testing.T, node string, env []string, script string) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir, cmd.Env = clientsDir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	defer noLeftovers(t)
	if err != nil {
		t.Errorf("node %s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	seen := map[string]bool{}
	done := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r struct {
			Case, Status, Detail string
			Done                 bool
			Validations          int
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Errorf("%s printed %q", script, sc.Text())
			continue
		}
		if r.Done {
			done = true
			if r.Validations > 0 {
				t.Logf("the client validated %d results against their output schemas", r.Validations)
			}
			continue
		}
		seen[r.Case] = true
		t.Run(r.Case, func(t *testing.T) {
			switch r.Status {
			case "pass":
			case "skip":
				t.Skip(r.Detail)
			default:
				t.Errorf("%s", r.Detail)
			}
		})
	}
	if !done {
		t.Errorf("%s did not finish; stderr:\n%s", script, stderr.String())
	}
	return seen
}

// TestTypeScriptElicitation runs clients/elicit.mjs: the TypeScript SDK client's
// elicitation handler answers the server's questions about calls beyond the
// user's ceiling each way (once, for the session, always, decline, no answer
// before the timeout), and a client without elicitation gets the refusal. In
// both protocol eras: SDK v1 on 2025-11-25 (asked with elicitation/create), SDK
// v2 pinned to 2026-07-28 (asked through multi round-trip requests).
func TestTypeScriptElicitation(t *testing.T) {
	for _, era := range askEras {
		t.Run(era, func(t *testing.T) {
			seen := runAskCases(t, era, "elicit.mjs")
			for _, c := range []string{"accept once", "accept for the session", "always", "decline", "no answer before the timeout", "client without elicitation"} {
				if !seen[c] {
					t.Errorf("elicit.mjs reported no case %q", c)
				}
			}
		})
	}
}

// TestTypeScriptAskReach runs clients/askreach.mjs: a command's connection to
// a host its allowHosts does not list is held while the TypeScript SDK
// client's elicitation handler answers each way; execute_js's fetch too. In
// both eras, as TestTypeScriptElicitation.
func TestTypeScriptAskReach(t *testing.T) {
	requireSandbox(t)
	if !namespaced() {
		t.Skipf("allowHosts needs a network namespace for the command, which mode %s lacks", hostMode())
	}
	for _, era := range askEras {
		t.Run(era, func(t *testing.T) {
			seen := runAskCases(t, era, "askreach.mjs")
			for _, c := range []string{"accept once", "accept for the session", "always", "decline", "no answer before the timeout", "client without elicitation", "execute_js fetch"} {
				if !seen[c] {
					t.Errorf("askreach.mjs reported no case %q", c)
				}
			}
		})
	}
}

// askEras are the protocol revisions the asking scripts run on (AUTOBOX_MCP_ERA).
var askEras = []string{"2025-11-25", "2026-07-28"}

// runAskCases runs a script of test/clients that starts its own servers
// (AUTOBOX_BIN) with fixtures of its own (AUTOBOX_FIXTURES), with the clients
// of era, as runCases.
func runAskCases(t *testing.T, era, script string) map[string]bool {
	t.Helper()
	node := nodeClients(t)
	env, home := nodeEnv(t, node)
	if era >= "2026-07-28" && nodeMajor(t, node) < 20 {
		t.Skip("the TypeScript SDK v2 client (2026-07-28) needs Node 20 or later")
	}
	fixtures := filepath.Join(home, "fixtures")
	if err := os.Mkdir(fixtures, 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env, "AUTOBOX_BIN="+bin, "AUTOBOX_FIXTURES="+fixtures, "AUTOBOX_MCP_ERA="+era)
	return runCases(t, node, env, script)
}

// inspector runs the MCP Inspector's command line against the binary and returns
// what it printed as JSON and its exit status.
func inspector(t *testing.T, node string, env []string, args ...string) (map[string]any, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var serverEnv []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "TMPDIR" || k == "AUTOBOX_STATE_DIR" || k == "XDG_DATA_HOME" {
			serverEnv = append(serverEnv, "-e", kv)
		}
	}
	argv := append([]string{filepath.Join("node_modules", ".bin", "mcp-inspector"), "--cli", "--format", "json", "-q"}, serverEnv...)
	argv = append(append(argv, bin), args...)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.Dir, cmd.Env = clientsDir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("inspector %v: %v", args, err)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("inspector %v: exit %d, stdout %q, stderr %q", args, code, out, stderr.String())
	}
	return res, code
}

// TestInspectorCLI: the MCP Inspector's command line lists the tools with its
// portability check (--strict: no schema a client could refuse) and calls each tool,
// every result checked against the output schema it listed.
func TestInspectorCLI(t *testing.T) {
	node := nodeClients(t)
	env, home := nodeEnv(t, node)
	defer noLeftovers(t)
	list, code := inspector(t, node, env, "--method", "tools/list", "--strict")
	if code != 0 {
		t.Fatalf("tools/list --strict: exit %d: %v", code, list)
	}
	schemas := map[string]*jsonschema.Resolved{}
	raw, _ := json.Marshal(list["result"].(map[string]any)["tools"])
	var tools []map[string]any
	json.Unmarshal(raw, &tools)
	for _, tool := range tools {
		rs, err := resolve(tool["outputSchema"], nil)
		if err != nil {
			t.Fatalf("%v: output schema: %v", tool["name"], err)
		}
		schemas[tool["name"].(string)] = rs
	}
	if names := slices.Sorted(maps.Keys(schemas)); !slices.Equal(names, []string{"copy_then_sync", "exec_command", "exec_session", "execute_js"}) {
		t.Fatalf("tools %v", names)
	}
	src := filepath.Join(home, "project")
	writeFile(t, filepath.Join(src, "a.txt"), "alpha")
	call := func(tool string, args map[string]any, wantErr bool) map[string]any {
		t.Helper()
		argsJSON, _ := json.Marshal(args)
		out, code := inspector(t, node, env, "--method", "tools/call", "--tool-name", tool, "--tool-args-json", string(argsJSON))
		// The Inspector exits 5 for a result with isError, and prints it all the same.
		if (code == 5) != wantErr || (code != 0 && code != 5) {
			t.Errorf("%s %s: exit %d, want a tool error: %v", tool, argsJSON, code, wantErr)
		}
		raw, _ := json.Marshal(out["result"])
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatalf("%s: result %s: %v", tool, raw, err)
		}
		if err := checkResult(schemas, tool, &res); err != nil {
			t.Errorf("%s %s: %v", tool, argsJSON, err)
		}
		if res.IsError != wantErr {
			t.Errorf("%s %s: isError %v: %s", tool, argsJSON, res.IsError, raw)
		}
		o, _ := res.StructuredContent.(map[string]any)
		return o
	}
	if o := call("execute_js", map[string]any{"code": "6*7"}, false); o["result"] != float64(42) {
		t.Errorf("execute_js: %v", o)
	}
	if o := call("execute_js", map[string]any{"code": "1", "timeoutMs": 0}, true); o["ok"] != false {
		t.Errorf("execute_js with timeoutMs 0: %v", o)
	}
	if canSandbox() {
		if o := call("exec_command", map[string]any{"command": []string{"cat", "/mnt/p/a.txt"}, "mounts": []any{map[string]any{"hostPath": src, "sandboxPath": "/mnt/p"}}}, false); o["stdout"] != "alpha" {
			t.Errorf("exec_command: %v", o)
		}
	}
	if o := call("exec_command", map[string]any{"command": "ls"}, true); o["exitCode"] != nil || o["error"] == nil {
		t.Errorf("exec_command with a string command: %v", o)
	}
	// Each Inspector run is a server of its own: its sessions end with it. One
	// that ends within its yield answers as an ordinary result; exec_session
	// list answers with none open.
	if canSandbox() {
		// It prints nothing, so that no pause of its output answers before its end.
		if o := call("exec_command", map[string]any{"command": []string{"sh", "-c", "exit 3"}, "yieldMs": 10000}, false); o["exitCode"] != float64(3) || o["running"] != nil {
			t.Errorf("exec_command with yieldMs: %v", o)
		}
	}
	if o := call("exec_session", map[string]any{"action": "list"}, false); fmt.Sprint(o["sessions"]) != "[]" {
		t.Errorf("exec_session list: %v", o)
	}
	if o := call("exec_session", map[string]any{"action": "poll", "sessionId": "s-nothing"}, true); o["exitCode"] != nil || !strings.HasPrefix(fmt.Sprint(o["error"]), "unknown or ended session") {
		t.Errorf("exec_session poll of an unknown id: %v", o)
	}
	c := call("copy_then_sync", map[string]any{"action": "create", "hostPath": src, "sandboxPath": "/mnt/p", "copyMode": "auto", "storagePath": filepath.Join(home, "storage")}, false)
	id, _ := c["workspaceId"].(string)
	if c["ok"] != true || id == "" {
		t.Fatalf("copy_then_sync create: %v", c)
	}
	if o := call("copy_then_sync", map[string]any{"action": "status", "workspaceId": id}, false); o["ok"] != true {
		t.Errorf("copy_then_sync status: %v", o)
	}
	if o := call("copy_then_sync", map[string]any{"action": "discard", "workspaceId": id}, false); o["ok"] != true {
		t.Errorf("copy_then_sync discard: %v", o)
	}
}

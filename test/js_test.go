package test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type jsOut struct {
	OK         bool            `json:"ok"`
	Result     json.RawMessage `json:"result"`
	Error      *string         `json:"error"`
	Logs       []string        `json:"logs"`
	DurationMs float64         `json:"durationMs"`
	ReadBytes  int64           `json:"readBytes"`
	WriteBytes int64           `json:"writeBytes"`
}

func (o jsOut) err() string {
	if o.Error == nil {
		return ""
	}
	return *o.Error
}

func (s *session) js(args map[string]any) (jsOut, bool) {
	s.t.Helper()
	var o jsOut
	isErr := s.call("execute_js", args, &o)
	return o, isErr
}

// mustJS runs code that must succeed and returns its result JSON.
func (s *session) mustJS(args map[string]any) jsOut {
	s.t.Helper()
	o, isErr := s.js(args)
	if isErr || !o.OK || o.Error != nil {
		s.t.Fatalf("execute_js %v: want ok, got isError=%v %+v (error %q)", args["code"], isErr, o, o.err())
	}
	return o
}

func TestJSSeedExample(t *testing.T) {
	s := start(t)
	o := s.mustJS(map[string]any{"code": `JSON.parse('{"a":1}').a + 41`})
	if string(o.Result) != "42" {
		t.Errorf("result = %s, want 42", o.Result)
	}
	if o.Logs == nil || len(o.Logs) != 0 {
		t.Errorf("logs = %#v, want []", o.Logs)
	}
	if o.DurationMs <= 0 {
		t.Errorf("durationMs = %v, want > 0", o.DurationMs)
	}
}

func TestJSResults(t *testing.T) {
	s := start(t)
	cases := []struct{ code, want string }{
		{"2+2", "4"},
		{"2+2;", "4"},
		{"2+2 ;\n ;", "4"},
		{"const a = 20; return a * 2 + 2", "42"},
		{"const a = 20; a * 2 + 2", "42"},
		{"let n = 0; for (let i = 0; i < 5; i++) n += i; n", "10"},
		{"function sq(x) { return x * x }\nsq(7)", "49"},
		{"await Promise.resolve(7)", "7"},
		{"const v = await new Promise(r => setTimeout(() => r('late'), 5)); return v", `"late"`},
		{"undefined", "null"},
		{"return", "null"},
		{"null", "null"},
		{"'héllo ✓'", `"héllo ✓"`},
		{"({a: [1, {b: true}], c: null})", `{"a":[1,{"b":true}],"c":null}`},
		{"(function foo() {})", `"[Function: foo]"`},
		{"Symbol('s')", `"Symbol(s)"`},
		{"10n ** 20n", `"100000000000000000000n"`},
		{"const o = {n: 1}; o.self = o; return o", `{"n":1,"self":"[Circular]"}`},
		{"NaN", `"NaN"`},
		{"new Map([['k', 1]])", `{"k":1}`},
		{"new Set([1, 2])", `[1,2]`},
		{"new Date(0)", `"1970-01-01T00:00:00.000Z"`},
		{"typeof process + typeof require + typeof fetch + typeof net", `"undefinedundefinedundefinedundefined"`},
		{"typeof host.readFile", `"function"`},
		{"// a comment at the end\n 5 // trailing", "5"},
		// After top-level await, the last expression statement is the value too,
		// whatever it starts with.
		{"const a = await Promise.resolve(1); [a, 2]", "[1,2]"},
		{"const a = await 1; a + 1", "2"},
		{"await 1; (2)", "2"},
		{"await 1; ((2)); // trailing", "2"},
		{"await 1; ({a: 1})", `{"a":1}`},
		{"const x = await 'x';\n`t${x}`", `"tx"`},
		{"await 1; -1", "-1"},
		{"await 1; !0", "true"},
		{"await 1; typeof (x)", `"undefined"`},
		{"await 1; void 0", "null"},
		{"await 1; await Promise.resolve(3)", "3"},
		{"let a = await 2; a **= 2; a;;", "4"},
		{"await 1; x => x", `"[Function (anonymous)]"`},
		{"await 1\n[1, 2]", "null"}, // no semicolon: JavaScript reads await (1[1, 2])
		{"await 1; {a: 1}", "null"}, // a block with a label, not an object
		{"await 1; if (true) { 5 }", "null"},
	}
	for _, c := range cases {
		o := s.mustJS(map[string]any{"code": c.code})
		if string(o.Result) != c.want {
			t.Errorf("%q: result %s, want %s", c.code, o.Result, c.want)
		}
	}
}

func TestJSErrors(t *testing.T) {
	s := start(t)
	cases := []struct{ code, want string }{
		{"throw new Error('boom')", "Error: boom"},
		{"throw new TypeError('bad')", "TypeError: bad"},
		{"throw 'str'", "Uncaught str"},
		{"nope.x", "ReferenceError: nope is not defined"},
		{"await Promise.reject(new RangeError('r'))", "RangeError: r"},
		{"return {", "SyntaxError: Unexpected end of input (line 1, column 9)"},
		// Syntax errors are in the user's terms: their token and position, never
		// the wrapper's.
		{"1+", "SyntaxError: Unexpected end of input (line 1, column 3)"},
		{"await 1 +", "SyntaxError: Unexpected end of input (line 1, column 10)"},
		{"1 }", "SyntaxError: Unexpected token '}' (line 1, column 3)"},
		{"const a = 1;\nlet b = );", "SyntaxError: Unexpected token ')' (line 2, column 9)"},
		{"const a = await 1;\nlet b = );", "SyntaxError: Unexpected token ')' (line 2, column 9)"},
		{"foo(\n\n", "SyntaxError: Unexpected end of input (line 3, column 1)"},
		{"({ toJSON() { throw new Error('no json') } })", "no json"},
	}
	for _, c := range cases {
		o, isErr := s.js(map[string]any{"code": c.code})
		if !isErr || o.OK || !strings.Contains(o.err(), c.want) {
			t.Errorf("%q: want isError with %q, got isError=%v ok=%v error=%q", c.code, c.want, isErr, o.OK, o.err())
		}
		if string(o.Result) != "null" {
			t.Errorf("%q: result %s, want null on error", c.code, o.Result)
		}
	}
}

func TestJSLogs(t *testing.T) {
	s := start(t)
	o := s.mustJS(map[string]any{"code": "console.log('a', 1, {b: 2}); console.error('e'); return 1"})
	want := []string{`a 1 {"b":2}`, "e"}
	if strings.Join(o.Logs, "|") != strings.Join(want, "|") {
		t.Errorf("logs = %q, want %q", o.Logs, want)
	}
	// Bounded: a flood of logs is cut with a marker, and the call still succeeds.
	o = s.mustJS(map[string]any{"code": "for (let i = 0; i < 100000; i++) console.log('line ' + i); return 'done'"})
	if len(o.Logs) > 1001 || !strings.Contains(o.Logs[len(o.Logs)-1], "logs truncated") {
		t.Errorf("flooded logs: %d lines, last %q", len(o.Logs), o.Logs[len(o.Logs)-1])
	}
}

func TestJSTimeouts(t *testing.T) {
	s := start(t)
	cases := []string{
		"while (true) {}",
		"for (;;) { await null }",
		"await new Promise(() => {})",
		"const f = () => Promise.resolve().then(f); f(); await new Promise(() => {})",
		"(async () => { while (true) await 0 })(); await new Promise(() => {})",
		"setInterval(() => {}, 1); await new Promise(() => {})",
		"/(a+)+$/.test('a'.repeat(40) + '!')",
	}
	for _, code := range cases {
		o, isErr := s.js(map[string]any{"code": code, "timeoutMs": 60, "memoryMb": 16})
		if !isErr || o.OK || o.err() != "TimeoutError: execution exceeded 60ms: raise timeoutMs (at most 10000) for a longer script; longer work runs in exec_command (node, python3, …; its timeoutMs up to 600000)" {
			t.Errorf("%q: want timeout error, got isError=%v %+v error=%q", code, isErr, o, o.err())
		}
	}
	// The server keeps serving.
	if o := s.mustJS(map[string]any{"code": "1"}); string(o.Result) != "1" {
		t.Errorf("after timeouts: %s", o.Result)
	}
}

func TestJSMemoryLimit(t *testing.T) {
	s := start(t)
	bombs := []string{
		"const a = []; while (true) a.push(new Array(10000).fill(Math.random()))",
		"let s = 'x'; const keep = []; while (true) { keep.push(s + Math.random()); s += s.length < 1e6 ? s : '' }",
		"const o = {}; for (let i = 0; ; i++) o['k' + i] = i",
	}
	for _, code := range bombs {
		o, isErr := s.js(map[string]any{"code": code, "memoryMb": 16, "timeoutMs": 10000})
		if !isErr || o.OK || !strings.Contains(o.err(), "MemoryLimitError") {
			t.Errorf("%q: want memory-limit error, got isError=%v error=%q", code, isErr, o.err())
		}
	}
	// Memory outside the heap (ArrayBuffers) is bounded too, by the RSS watchdog.
	o, isErr := s.js(map[string]any{"code": "const keep = []; for (;;) keep.push(new Uint8Array(16 << 20).fill(1))", "memoryMb": 16, "timeoutMs": 10000})
	if !isErr || !strings.Contains(o.err(), "MemoryLimitError") {
		t.Errorf("ArrayBuffer bomb: isError=%v error=%q", isErr, o.err())
	}
	// Positive control: the same kind of allocation within budget succeeds.
	s.mustJS(map[string]any{"code": "const b = new Uint8Array(8 << 20).fill(1); b.length", "memoryMb": 16, "timeoutMs": 10000})
	o = s.mustJS(map[string]any{"code": "const a = []; for (let i = 0; i < 100; i++) a.push(new Array(1000).fill(i)); return a.length", "memoryMb": 64, "timeoutMs": 10000})
	if string(o.Result) != "100" {
		t.Errorf("within budget: %s", o.Result)
	}
	// memoryMb sets the limit both ways: 120 MB of numbers fails at the default
	// (32) and fits in 200.
	big := "const a = []; for (let i = 0; i < 120; i++) a.push(new Array(125000).fill(i + 0.5)); return a.length"
	if o, isErr := s.js(map[string]any{"code": big, "timeoutMs": 10000}); !isErr || !strings.Contains(o.err(), "MemoryLimitError") {
		t.Errorf("120 MB at the default memoryMb: isError=%v error=%q", isErr, o.err())
	}
	if o := s.mustJS(map[string]any{"code": big, "memoryMb": 200, "timeoutMs": 10000}); string(o.Result) != "120" {
		t.Errorf("120 MB with memoryMb 200: %s", o.Result)
	}
}

func TestJSNothingCarriesOver(t *testing.T) {
	s := start(t)
	s.mustJS(map[string]any{"code": "globalThis.leak = 42; Object.prototype.polluted = 1; return 1"})
	o := s.mustJS(map[string]any{"code": "typeof leak + ':' + typeof ({}).polluted"})
	if string(o.Result) != `"undefined:undefined"` {
		t.Errorf("state carried over between calls: %s", o.Result)
	}
}

func TestJSArgumentValidation(t *testing.T) {
	s := start(t)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "code"},
		{map[string]any{"code": ""}, "code is required"},
		{map[string]any{"code": "1", "timeoutMs": 0}, "timeoutMs must be between 1 and 10000"},
		{map[string]any{"code": "1", "timeoutMs": 10001}, "timeoutMs must be between 1 and 10000"},
		{map[string]any{"code": "1", "memoryMb": 7}, "memoryMb must be between 8 and 512"},
		{map[string]any{"code": "1", "memoryMb": 513}, "memoryMb must be between 8 and 512"},
		{map[string]any{"code": "1", "timeoutMs": "fast"}, "timeoutMs"},
		{map[string]any{"code": "1", "timeoutMs": 1.5}, "timeoutMs"},
		{map[string]any{"code": 5}, "code"},
		{map[string]any{"code": "1", "maxReadBytes": 50000001}, "maxReadBytes must be between 0 and 50000000"},
		{map[string]any{"code": "1", "maxWriteBytes": -1}, "maxWriteBytes must be between 0 and 50000000"},
		{map[string]any{"code": "1", "allowNetwork": "yes"}, "allowNetwork"},
		{map[string]any{"code": "1", "mounts": "nope"}, "mounts"},
	}
	for _, c := range cases {
		res := s.callRaw("execute_js", c.args)
		if !res.IsError || !strings.Contains(errorOf(res), c.want) {
			t.Errorf("%v: want tool error mentioning %q, got isError=%v %s", c.args, c.want, res.IsError, textOf(res))
		}
	}
	// The session keeps working.
	s.mustJS(map[string]any{"code": "1"})
}

// TestJSWorkerKilled: a worker killed from outside mid-call fails only that call.
func TestJSWorkerKilled(t *testing.T) {
	s := start(t)
	s.mustJS(map[string]any{"code": "0"})
	done := make(chan jsOut, 1)
	go func() {
		o, _ := s.js(map[string]any{"code": "while (true) {}", "timeoutMs": 10000})
		done <- o
	}()
	// The busy worker: the one whose CPU time grows as a loop's does.
	syscall.Kill(workerBusy(t, s.cmd.Process.Pid), syscall.SIGKILL)
	if o := <-done; o.OK || !strings.Contains(o.err(), "crashed") || !strings.Contains(o.err(), "killed") {
		t.Errorf("killed worker: %+v (%q)", o, o.err())
	}
	if o := s.mustJS(map[string]any{"code": "1 + 1"}); string(o.Result) != "2" {
		t.Errorf("after a killed worker: %s", o.Result)
	}
}

// TestServerKilledTakesWorkers: the workers of a server killed with SIGKILL end too,
// the one running a JS loop included: they watch the server's life pipe (they have
// no parent-death signal, see pool), and launchers waiting in the pool see their
// control socket close.
func TestServerKilledTakesWorkers(t *testing.T) {
	requireSandbox(t)
	s := start(t)
	s.mustJS(map[string]any{"code": "0"})
	s.exec(map[string]any{"command": []string{"true"}}) // launchers in the pool too
	// A JS loop that ends with the server, running before the server is killed.
	go s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_js", Arguments: map[string]any{"code": "while (true) {}", "timeoutMs": 10000}})
	workerBusy(t, s.cmd.Process.Pid)
	kids := descendants(s.cmd.Process.Pid)
	if len(kids) < 3 {
		t.Fatalf("want workers and launchers below the server, got %v", kids)
	}
	s.cmd.Process.Kill()
	waitGone(t, kids)
	// What it could not remove (its scratch dirs; cgroups, checked by the harness)
	// the next autobox process with the same TMPDIR does.
	left, _ := filepath.Glob(filepath.Join(s.tmp, "autobox-scratch-*"))
	if len(left) == 0 {
		t.Fatal("the killed server left no scratch dir: nothing to check the sweep with")
	}
	next := exec.Command(bin, "doctor")
	next.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "TMPDIR=" + s.tmp, "AUTOBOX_STATE_DIR=" + t.TempDir()}
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, d := range left {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s of the killed server is still there", d)
		}
	}
}

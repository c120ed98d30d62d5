//go:build linux

package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCLIHelp(t *testing.T) {
	h := newCLIHome(t)
	for _, c := range [][]string{{"js", "--help"}, {"exec", "--help"}, {"ws", "--help"}, {"ws", "status", "-h"}, {"batch", "--help"}, {"doctor", "--help"}, {"session", "--help"}} {
		r := h.run("", c...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: autobox "+c[0]) || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "Flags:") {
			t.Errorf("%s", r)
		}
	}
	// Usage errors: exit 2 and a pointer to --help, on stderr only.
	for _, c := range [][]string{{"js", "--bogus"}, {"js", "-e", "1", "file.js"}, {"exec"}, {"exec", "--timeout", "soon", "true"}, {"ws"}, {"ws", "frob"}, {"ws", "status"}, {"ws", "status", "--storage", "/x", "id"}, {"ws", "create", "/tmp"}, {"batch", "--jobs", "0"}, {"batch", "a", "b"}, {"batch", "/nonexistent/calls.jsonl"}, {"doctor", "extra"}, {"session"}, {"session", "frob"}, {"session", "poll"}, {"session", "signal", "id", "INT", "more"}} {
		r := h.run("", c...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--help") {
			t.Errorf("usage error: %s", r)
		}
	}
}

func TestCLIJS(t *testing.T) {
	h := newCLIHome(t)
	h.want(h.run("", "js", "-e", `JSON.parse('{"a":1}').a + 41`), 0, "42\n", "")
	// Code from stdin; console output goes to stderr, the result to stdout.
	r := h.run("console.log('to stderr'); return {a: [1, 2]}", "js")
	if r.code != 0 || r.stdout != "{\"a\":[1,2]}\n" || r.stderr != "to stderr\n" {
		t.Errorf("stdin: %s", r)
	}
	h.want(h.run("2 * 21", "js", "-"), 0, "42\n", "")
	// Code from a file, flags after it.
	file := filepath.Join(h.dir, "script.js")
	writeFile(t, file, "return 'from a file'")
	if r := h.run("", "js", file, "--raw"); r.code != 0 || r.stdout != "from a file\n" {
		t.Errorf("file, --raw: %s", r)
	}
	// --json prints the whole result object.
	r = h.run("", "js", "--json", "-e", "console.log('x'); return 7")
	var o jsOut
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || r.code != 0 || !o.OK || string(o.Result) != "7" || len(o.Logs) != 1 {
		t.Errorf("--json: %v %s", err, r)
	}
	// Failures and their exit statuses.
	h.want(h.run("", "js", "-e", "throw new Error('boom')"), 1, "", "Error: boom")
	r = h.run("", "js", "--json", "-e", "throw new Error('boom')")
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || r.code != 1 || o.OK || o.err() != "Error: boom" {
		t.Errorf("--json failure: %s", r)
	}
	h.want(h.run("", "js", "--timeout", "100", "-e", "while (true) {}"), 124, "", "TimeoutError: execution exceeded 100ms")
	h.want(h.run("", "js", "--timeout", "1s", "-e", "await new Promise(() => {})"), 124, "", "TimeoutError: execution exceeded 1000ms")
	// A script's own errors named as the limits' are its failure (exit 1): the
	// exit status comes from how the call ended, not from the error's text.
	h.want(h.run("", "js", "-e", "const e = new Error('execution exceeded 5ms'); e.name = 'TimeoutError'; throw e"), 1, "", "TimeoutError: execution exceeded 5ms")
	h.want(h.run("", "js", "-e", "const e = new Error('the isolate was terminated'); e.name = 'MemoryLimitError'; throw e"), 1, "", "MemoryLimitError: the isolate was terminated")
	bomb := "const a = []; while (true) a.push(new Array(10000).fill(Math.random()))"
	h.want(h.run("", "js", "--memory", "16", "--timeout", "10s", "-e", bomb), 137, "", "MemoryLimitError")
	h.want(h.run("", "js", "--memory", "64", "-e", "const a = []; for (let i = 0; i < 100; i++) a.push(new Array(1000).fill(i)); return a.length"), 0, "100\n", "")
	// The tool's validation, in the command line's words (its flags), exit 125.
	h.want(h.run("", "js", "--memory", "4", "-e", "1"), 125, "", "invalid argument: --memory must be between 8 and 512, got 4")
	h.want(h.run("", "js", "--timeout", "20s", "-e", "1"), 125, "", "--timeout must be between 1 and 10000")
	h.want(h.run("", "js", "--max-read", "-1", "-e", "1"), 125, "", "--max-read must be between 0 and 50000000")
	h.want(h.run("", "js"), 125, "", "code is required")
	h.want(h.run("", "js", "--mount", "/nonexistent-dir:/mnt/x", "-e", "1"), 125, "", "does not exist")

	// Mounts: read-only denies writes, read-write allows them (positive control).
	data := filepath.Join(h.dir, "files")
	writeFile(t, filepath.Join(data, "in.txt"), "hello")
	read := "return await host.readFile('/mnt/d/in.txt')"
	write := "await host.writeFile('/mnt/d/out.txt', 'x'); return 'written'"
	h.want(h.run("", "js", "--mount", "files:/mnt/d", "-e", read), 0, `"hello"`, "")
	h.want(h.run("", "js", "--mount", data+":/mnt/d:ro", "-e", write), 1, "", "")
	if _, err := os.Stat(filepath.Join(data, "out.txt")); err == nil {
		t.Errorf("a write through a read-only mount reached the host")
	}
	h.want(h.run("", "js", "--mount", data+":/mnt/d:rw", "-e", write), 0, `"written"`, "")
	if got := readFile(t, filepath.Join(data, "out.txt")); got != "x" {
		t.Errorf("write through rw mount: %q", got)
	}
	// Without --network there is no fetch at all.
	h.want(h.run("", "js", "-e", "typeof fetch"), 0, `"undefined"`, "")
	h.want(h.run("", "js", "--network", "-e", "typeof fetch"), 0, `"function"`, "")
}

func TestCLIExec(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	// The command's output passes through and its exit status becomes autobox's.
	r := h.run("", "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if r.code != 3 || r.stdout != "out\n" || r.stderr != "err\n" {
		t.Errorf("pass-through: %s", r)
	}
	r = h.run("", "exec", "--json", "sh", "-c", "echo out; exit 3")
	var o execOut
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || r.code != 3 || o.code() != 3 || o.Stdout != "out\n" {
		t.Errorf("--json: %v %s", err, r)
	}
	h.want(h.run("", "exec", "true"), 0, "", "")
	h.want(h.run("", "exec", "--timeout", "200", "--", "sleep", "10"), 124, "", "killed: timeout after 200ms")
	h.want(h.run("", "exec", "--mount", toolsDir+":/mnt/tools", "--memory", "64", "--timeout", "10s", "--", "/mnt/tools/probe", "hog", "200"), 137, "", "memory limit exceeded")
	h.want(h.run("", "exec", "--mount", toolsDir+":/mnt/tools", "--memory", "128", "--timeout", "10s", "--", "/mnt/tools/probe", "hog", "20"), 0, "ok allocated 20 MB", "")
	h.want(h.run("", "exec", "no-such-program-4f1c"), 126, "", "could not be started")
	h.want(h.run("", "exec", "--", "sh", "-c", "kill -SEGV $$"), 128+11, "", "")
	h.want(h.run("", "exec", "--memory", "1", "true"), 125, "", "invalid argument: --memory must be between 16 and 2048, got 1")
	h.want(h.run("", "exec", "--cwd", "/nonexistent", "true"), 125, "", "cwd")
	// Limits beyond time and memory: each kill has its exit status and reason,
	// and errors name the flags.
	h.want(h.run("", "exec", "--max-processes", "20", "--timeout", "20s", "--", "bash", "-c", ":(){ :|:& };:; sleep 15"), 154, "", "process limit exceeded (")
	h.want(h.run("", "exec", "--max-write-mb", "10", "--timeout", "10s", "--", "sh", "-c", "for i in 1 2 3 4; do dd if=/dev/zero of=f$i bs=1M count=4 status=none; sleep 0.05; done"), 153, "", "disk limit exceeded (")
	h.want(h.run("", "exec", "--cpu", "200", "--timeout", "10s", "--", "sh", "-c", "while :; do :; done"), 152, "", "ms CPU > --cpu 200; watchdog)\n")
	h.want(h.run("", "exec", "--max-open-files", "70", "--", "sh", "-c", "ulimit -n"), 0, "70\n", "")
	h.want(h.run("", "exec", "--max-processes", "0", "true"), 125, "", "invalid argument: --max-processes must be between 1 and 4096, got 0")
	h.want(h.run("", "exec", "--cpu", "2000000", "true"), 125, "", "invalid argument: --cpu must be between 0 and 1000000, got 2000000")

	// The sandbox: a file outside the mounts is unreadable; mounted, it reads.
	secret := filepath.Join(h.dir, "secret")
	writeFile(t, filepath.Join(secret, "s.txt"), "s")
	tools := "--mount=" + toolsDir + ":/mnt/tools"
	r = h.run("", "exec", tools, "--", "/mnt/tools/probe", "read", filepath.Join(secret, "s.txt"))
	if r.code != 1 || !strings.HasPrefix(r.stdout, "denied:") {
		t.Errorf("read outside the mounts: %s", r)
	}
	h.want(h.run("", "exec", tools, "--mount", secret+":/mnt/s", "--", "/mnt/tools/probe", "read", "/mnt/s/s.txt"), 0, "ok 1 bytes", "")
	// Writes need rw; a relative host path and a sandbox cwd work as in the tool.
	h.want(h.run("", "exec", "--mount", "secret:/mnt/s", "--cwd", "/mnt/s", "--", "sh", "-c", "echo x > new.txt || exit 9"), 9, "", "")
	h.want(h.run("", "exec", "--mount", "secret:/mnt/s:rw", "--cwd", "/mnt/s", "--", "sh", "-c", "echo x > new.txt && cat new.txt"), 0, "x\n", "")
	// No network without --network: no socket, or (in a namespace of its own)
	// loopback alone.
	r = h.run("", "exec", tools, "--", "/mnt/tools/probe", "socket", "2", "1")
	if namespaced() {
		r = h.run("", "exec", tools, "--", "/mnt/tools/probe", "tcp", "192.0.2.1:80")
	}
	if r.code != 1 || !strings.HasPrefix(r.stdout, "denied:") {
		t.Errorf("the network without --network: %s", r)
	}
	h.want(h.run("", "exec", tools, "--network", "--", "/mnt/tools/probe", "socket", "2", "1"), 0, "ok", "")
}

func TestCLIWorkspace(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	src := filepath.Join(h.dir, "src")
	writeFile(t, filepath.Join(src, "hello.txt"), "hello\n")
	writeFile(t, filepath.Join(src, "gone.txt"), "bye\n")
	writeFile(t, filepath.Join(src, "node_modules", "big.js"), "excluded")
	storage := filepath.Join(h.dir, "storage")
	if err := os.Mkdir(storage, 0o700); err != nil {
		t.Fatal(err)
	}
	h.want(h.run("", "ws", "list"), 0, "", "no workspaces")

	r := h.run("", "ws", "create", "--copy-mode", "auto", "--storage", storage, "--exclude", "node_modules", "src", "/mnt/project")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 36 || !strings.Contains(r.stderr, "2 copied") && !strings.Contains(r.stderr, "2 files cloned") || !strings.Contains(r.stderr, "(--copy-mode auto: c") {
		t.Fatalf("create: %s", r)
	}
	h.want(h.run("", "exec", "--workspace", id, "--cwd", "/mnt/project", "--", "sh", "-c", "echo changed > hello.txt; rm gone.txt; echo new > new.txt"), 0, "", "")
	h.want(h.run("", "js", "--workspace", id, "-e", "await host.readFile('/mnt/project/new.txt')"), 0, `"new\n"`, "")

	r = h.run("", "ws", "status", id)
	for _, want := range []string{"at /mnt/project", "ACTION  PATH", "delete  gone.txt", "modify  hello.txt", "add     new.txt"} {
		if !strings.Contains(r.stdout, want) || r.code != 0 {
			t.Errorf("status: want %q in %s", want, r)
		}
	}
	r = h.run("", "ws", "status", "--json", id)
	var st wsOut
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.OK || len(st.Changes) != 3 {
		t.Errorf("status --json: %v %s", err, r)
	}
	r = h.run("", "ws", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, src) || !strings.HasSuffix(strings.TrimSpace(r.stdout), "yes") {
		t.Errorf("list with unsynced changes: %s", r)
	}

	// A conflict: sync refuses, exit 1, nothing applied.
	writeFile(t, filepath.Join(src, "hello.txt"), "host edit\n")
	r = h.run("", "ws", "sync", id)
	if r.code != 1 || !strings.Contains(r.stdout, "CONFLICT") || !strings.Contains(r.stdout, "hello.txt") {
		t.Errorf("conflicted sync: %s", r)
	}
	if readFile(t, filepath.Join(src, "gone.txt")) != "bye\n" {
		t.Errorf("a conflicted sync applied changes")
	}
	// Busy: another process holds the operation lock (exit 75); released, the same call works.
	lock, err := os.OpenFile(filepath.Join(h.state, "operation.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	h.want(h.run("", "ws", "status", id), 75, "", "Another autobox operation may be busy")
	lock.Close()
	h.want(h.run("", "ws", "status", id), 0, "CONFLICT", "") // status is ok: it reports conflicts

	writeFile(t, filepath.Join(src, "hello.txt"), "hello\n")
	h.want(h.run("", "ws", "sync", id), 0, "synced 3 of 3 changes", "")
	if got := readFile(t, filepath.Join(src, "hello.txt")); got != "changed\n" {
		t.Errorf("after sync: hello.txt = %q", got)
	}
	r = h.run("", "ws", "list", "--json")
	var list []struct {
		ID    string `json:"workspaceId"`
		Dirty bool   `json:"dirty"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != id || list[0].Dirty {
		t.Errorf("list --json after sync: %v %s", err, r)
	}
	h.want(h.run("", "ws", "discard", id), 0, "discarded "+id, "")
	h.want(h.run("", "ws", "status", id), 125, "", "not found")
	h.want(h.run("", "ws", "create", "--copy-mode", "sometimes", src, "/mnt/p"), 125, "", `--copy-mode sometimes: use "auto" (default) or "clone"`)
	h.want(h.run("", "ws", "create", src, "/"), 125, "", "")
}

// TestCLIBatch: bad lines (a heap bomb, an infinite loop, a malformed line, an unknown
// tool, bad arguments) fail alone; the good lines around them succeed, in input order.
func TestCLIBatch(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	input := strings.Join([]string{
		`{"id": 1, "tool": "execute_js", "arguments": {"code": "2 + 2"}}`,
		`{"id": "bomb", "tool": "execute_js", "arguments": {"code": "const a = []; while (true) a.push(new Array(10000).fill(Math.random()))", "memoryMb": 16, "timeoutMs": 10000}}`,
		`{"id": "loop", "tool": "execute_js", "arguments": {"code": "while (true) {}", "timeoutMs": 300}}`,
		`{"id": 4, "tool": "execute_js", "arguments": {"code": "'still fine'"}}`,
		`this is not JSON`,
		``,
		`{"id": 6, "tool": "exec_command", "arguments": {"command": ["sh", "-c", "echo from sh"]}}`,
		`{"id": 7, "tool": "exec_command", "arguments": {"command": ["sh", "-c", "exit 4"]}}`,
		`{"id": 8, "tool": "no_such_tool", "arguments": {}}`,
		`{"id": 9, "tool": "execute_js", "arguments": {"code": "1", "memoryMb": 4}}`,
		`{"id": 10, "tool": "execute_js", "arguments": {"code": "1", "colour": "blue"}}`,
		`{"id": 11, "tool": "copy_then_sync", "arguments": {"action": "status"}}`,
		`{"id": 12, "tool": "execute_js", "arguments": {"code": "await new Promise(r => setTimeout(() => r('last'), 50))"}}`,
		`{"id": 13, "tool": "exec_command", "arguments": {"command": ["sh", "-c", "while :; do :; done"], "cpuMs": 200, "timeoutMs": 10000}}`,
	}, "\n") + "\n"
	r := h.run(input, "batch", "--jobs", "2")
	type line struct {
		ID     any             `json:"id"`
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	want := []struct {
		id  any
		ok  bool
		has string // in the result or the error
	}{
		{1.0, true, `"result":4`},
		{"bomb", false, "MemoryLimitError"},
		{"loop", false, "TimeoutError: execution exceeded 300ms"},
		{4.0, true, `"still fine"`},
		{nil, false, "line 5: not a call object"},
		{6.0, true, `"stdout":"from sh\n"`},
		{7.0, false, `"exitCode":4`},
		{8.0, false, `unknown tool "no_such_tool"`},
		{9.0, false, "memoryMb must be between 8 and 512"},
		{10.0, false, `unknown field "colour"`},
		{11.0, false, "status needs workspaceId"},
		{12.0, true, `"last"`},
		{13.0, false, `"killed":true,"killedBy":"cpu","durationMs"`},
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("want %d output lines, got %s", len(want), r)
	}
	for i, l := range lines {
		var got line
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Errorf("line %d: %v: %s", i+1, err, l)
			continue
		}
		w := want[i]
		text := string(got.Result) + got.Error
		if got.ID != w.id || got.OK != w.ok || !strings.Contains(text, w.has) {
			t.Errorf("line %d: want id %v ok %v with %q, got %s", i+1, w.id, w.ok, w.has, l)
		}
	}
	// The summary is the last line on stderr; no progress bar when it is not a terminal.
	if !strings.Contains(lines[12], `"stderr":"cpu limit exceeded (`) || !strings.Contains(lines[12], `"usage":{"cpuMs":`) {
		t.Errorf("a batch line killed at its CPU limit: %s", lines[12])
	}
	if r.code != 1 || !strings.HasSuffix(r.stderr, "4 passed, 9 failed\n") || strings.ContainsAny(r.stderr, "\r\x1b") {
		t.Errorf("summary: %s", r)
	}

	// All good: exit 0. From a file, with more lines than jobs and a worker per call.
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"id": %d, "tool": "execute_js", "arguments": {"code": "globalThis.seen = (globalThis.seen || 0) + 1; return [%d, seen]"}}`+"\n", i, i)
	}
	file := filepath.Join(h.dir, "calls.jsonl")
	writeFile(t, file, b.String())
	r = h.run("", "batch", "-j", "3", file)
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 0 || len(lines) != 40 || !strings.HasSuffix(r.stderr, "40 passed, 0 failed\n") {
		t.Fatalf("40 good lines: %s", r)
	}
	for i, l := range lines {
		// Each call had a fresh isolate: nothing carried over (seen is 1).
		if want := fmt.Sprintf(`{"id":%d,"ok":true,"result":{"ok":true,"result":[%d,1],`, i, i); !strings.HasPrefix(l, want) {
			t.Errorf("line %d: want prefix %s, got %s", i, want, l)
		}
	}
}

// TestCLIBatchProgress: with stderr on a terminal, batch draws a progress bar there.
func TestCLIBatchProgress(t *testing.T) {
	h := newCLIHome(t)
	master, slave, err := openPTY()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	var b strings.Builder
	for i := range 5 {
		fmt.Fprintf(&b, `{"id": %d, "tool": "execute_js", "arguments": {"code": "%d"}}`+"\n", i, i)
	}
	// From a regular file, which batch counts ahead to draw a bar with a total.
	file := filepath.Join(h.dir, "calls.jsonl")
	writeFile(t, file, b.String())
	cmd := exec.Command(bin, "batch", "--jobs", "1", file)
	cmd.Env = h.env
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	err = cmd.Start()
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	tty, _ := io.ReadAll(master) // EIO once the last writer is gone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("batch: %v\n%s", err, tty)
	}
	if !strings.Contains(string(tty), "\r\x1b[K") || !strings.Contains(string(tty), "] 5/5, 0 failed") || !strings.Contains(string(tty), "5 passed, 0 failed") {
		t.Errorf("terminal output: %q", tty)
	}
	if strings.Count(stdout.String(), "\n") != 5 || strings.ContainsAny(stdout.String(), "\r\x1b") {
		t.Errorf("stdout: %q", stdout.String())
	}
	noLeftovers(t)
}

func TestCLIDoctor(t *testing.T) {
	requireSandbox(t)
	h := newCLIHome(t)
	r := h.run("", "doctor")
	line := func(status, name string) string { return fmt.Sprintf("%-7s  %-16s  ", status, name) }
	for _, want := range []string{line("ok", "os") + "linux/", line("ok", "landlock") + "ABI ", line("ok", "seccomp"), line("ok", "no_new_privs"),
		line("info", "user namespaces"), line("ok", "rss watchdog"), line("ok", "state dir") + h.state, line("ok", "storage"), "  reflink  ",
		line("ok", "execute_js"), line("ok", "exec_command"), "\nexec_command: runs sandboxed on this host\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor: want %q in\n%s", want, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("doctor on a host that sandboxes commands: %s", r)
	}
	t.Logf("doctor on this machine:\n%s", r.stdout)

	r = h.run("", "doctor", "--json")
	var rep struct {
		Checks []struct {
			Name, Status, Detail, Consequence string
		}
		ExecCommand bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !rep.ExecCommand || r.code != 0 {
		t.Fatalf("doctor --json: %v %s", err, r)
	}
	byName := map[string]string{}
	for _, c := range rep.Checks {
		byName[c.Name] = c.Status + ": " + c.Detail + " -> " + c.Consequence
	}
	// The storage is in the test's data dir: reflink is either there or explained.
	if ref := byName["reflink"]; !strings.HasPrefix(ref, "ok: yes (") && !(strings.HasPrefix(ref, "missing: no (") && strings.Contains(ref, "copyMode auto")) {
		t.Errorf("reflink line: %q", ref)
	}
	if !strings.HasPrefix(byName["storage"], "ok: "+filepath.Join(h.dir, "data", "autobox-workspaces")) {
		t.Errorf("storage line: %q", byName["storage"])
	}
	// The probe files are gone.
	left, _ := filepath.Glob(filepath.Join(h.dir, ".autobox-doctor-*"))
	deeper, _ := filepath.Glob(filepath.Join(h.dir, "*", ".autobox-doctor-*"))
	if left = append(left, deeper...); len(left) > 0 {
		t.Errorf("doctor left files behind: %v", left)
	}
}

// Drives autobox with the official TypeScript MCP SDK client, the one inside Claude
// Desktop, Claude Code, Cursor and the Inspector, over stdio, with the client's own
// output validation on: every call provokes one result shape of one tool, and the
// client checks each structuredContent against the tool's output schema (a counting
// wrapper around the SDK's default Ajv validator proves it ran for every result).
//
// Run by test/clients_test.go, which sets:
//   AUTOBOX_BIN       the binary under test
//   AUTOBOX_FIXTURES  an empty directory this script may fill
//   AUTOBOX_PROBE     a directory holding the test probe (its "hog" allocates memory)
//   AUTOBOX_CAN_EXEC  "1" when this host can sandbox commands
// and the server's environment (HOME, TMPDIR, AUTOBOX_STATE_DIR, XDG_DATA_HOME,
// XDG_CONFIG_HOME).
//
// Output: one JSON line per case, {"case", "status": "pass"|"fail"|"skip", "detail"},
// then {"done": true, "validations": N}.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { Ajv } from "ajv";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
const fixtures = env.AUTOBOX_FIXTURES;
const canExec = env.AUTOBOX_CAN_EXEC === "1";

// The SDK's own validator, counted.
let validations = 0;
class CountingValidator {
  inner = new AjvJsonSchemaValidator();
  getValidator(schema) {
    const validate = this.inner.getValidator(schema);
    return (input) => {
      validations++;
      return validate(input);
    };
  }
}

const serverEnv = {};
for (const k of ["PATH", "HOME", "TMPDIR", "AUTOBOX_STATE_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"]) {
  if (env[k] !== undefined) serverEnv[k] = env[k];
}
const transport = new StdioClientTransport({ command: env.AUTOBOX_BIN, args: [], env: serverEnv, stderr: "inherit" });
const client = new Client({ name: "autobox-conformance", version: "1" }, { jsonSchemaValidator: new CountingValidator() });

// Input schemas, compiled by Ajv in strict mode: valid arguments must pass them.
const inputValidators = {};

function report(name, status, detail) {
  console.log(JSON.stringify({ case: name, status, detail }));
}

async function check(name, fn, { needsExec = false } = {}) {
  if (needsExec && !canExec) {
    report(name, "skip", "this host cannot sandbox commands");
    return;
  }
  try {
    await fn();
    report(name, "pass");
  } catch (e) {
    if (e instanceof Skip) report(name, "skip", e.message);
    else report(name, "fail", e && e.stack ? e.stack : String(e));
  }
}

// Skip, thrown by a case, reports it skipped with its message.
class Skip extends Error {}

// call makes one tools/call through the client and checks what every result must
// have: structured content that the client validated against the output schema.
async function call(name, args, { valid = true, options } = {}) {
  if (valid) {
    assert.ok(inputValidators[name], `no input schema for ${name}: tools/list failed`);
    const ok = inputValidators[name](args);
    assert.ok(ok, `${name} arguments ${JSON.stringify(args)} fail the input schema: ${JSON.stringify(inputValidators[name].errors)}`);
  }
  const before = validations;
  const res = await client.callTool({ name, arguments: args }, undefined, { timeout: 60000, ...options });
  assert.ok(res.structuredContent, `${name} ${JSON.stringify(args)}: no structuredContent: ${JSON.stringify(res)}`);
  assert.equal(validations, before + 1, `${name}: the client did not validate the result`);
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent, `${name}: the text is not the structured content`);
  return res;
}

async function js(args, opts) {
  const res = await call("execute_js", args, opts);
  return [res.structuredContent, res.isError === true];
}

async function exec(args, opts) {
  const res = await call("exec_command", args, opts);
  return [res.structuredContent, res.isError === true];
}

async function session(args, opts) {
  const res = await call("exec_session", args, opts);
  return [res.structuredContent, res.isError === true];
}

// finish polls a session to its final answer, and returns it with all the stdout.
async function finish(id, out = "") {
  for (let i = 0; i < 50; i++) {
    const [p, isErr] = await session({ sessionId: id, action: "poll", yieldMs: 5000 });
    out += p.stdout;
    if (!p.running) return [p, isErr, out];
  }
  throw new Error(`session ${id} did not end`);
}

async function ws(args, opts) {
  const res = await call("copy_then_sync", args, opts);
  return [res.structuredContent, res.isError === true];
}

function jsFailed(o, isErr, prefix) {
  assert.ok(isErr, `want a tool error: ${JSON.stringify(o)}`);
  assert.equal(o.ok, false);
  assert.equal(o.result, null);
  assert.ok(typeof o.error === "string" && o.error.startsWith(prefix), `error ${JSON.stringify(o.error)}, want it to start with ${prefix}`);
}

function fixture(name, files) {
  const dir = path.join(fixtures, name);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  return dir;
}

// processes finds running processes whose command line is exactly argv.
function processes(argv) {
  const want = argv.join("\0") + "\0";
  const found = [];
  for (const pid of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/cmdline`, "latin1") === want) found.push(pid);
    } catch {}
  }
  return found;
}

async function until(what, cond, ms = 10000) {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
    if (cond()) return;
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

async function rejected(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("the call was not rejected");
}

const data = fixture("data", { "a.txt": "alpha\n", "sub/b.txt": "beta\n" });

await check("initialize", async () => {
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, "autobox");
  assert.ok(client.getServerCapabilities().tools, "no tools capability");
});

await check("ping", async () => {
  assert.deepEqual(await client.ping(), {});
});

await check("tools/list", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ["copy_then_sync", "exec_command", "exec_session", "execute_js"]);
  const ajv = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true });
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object");
    assert.equal(t.outputSchema.type, "object");
    inputValidators[t.name] = ajv.compile(t.inputSchema);
    ajv.compile(t.outputSchema);
  }
});

await check("execute_js ok", async () => {
  const [o, isErr] = await js({ code: "6*7" });
  assert.ok(!isErr);
  assert.deepEqual([o.ok, o.result, o.error, o.logs], [true, 42, null, []]);
  assert.ok(o.durationMs > 0);
});

await check("execute_js result values", async () => {
  const [o] = await js({ code: `({a: [1, "x", null], b: true, s: "é", n: 1.5})` });
  assert.deepEqual(o.result, { a: [1, "x", null], b: true, s: "é", n: 1.5 });
  for (const [code, want] of [["undefined", null], ["'s'", "s"], ["[1]", [1]], ["false", false], ["null", null]]) {
    const [o2] = await js({ code });
    assert.deepEqual(o2.result, want, code);
  }
});

await check("execute_js logs", async () => {
  const [o] = await js({ code: "console.log('hi'); console.error('oops'); 1" });
  assert.equal(o.logs.length, 2);
  const [t] = await js({ code: "for (let i = 0; i < 1500; i++) console.log(i); 1" });
  assert.match(t.logs[t.logs.length - 1], /logs truncated/);
});

await check("execute_js thrown error", async () => {
  const [o, isErr] = await js({ code: "throw new Error('boom')" });
  jsFailed(o, isErr, "Error: boom");
  const [s, sErr] = await js({ code: "1+" });
  jsFailed(s, sErr, "SyntaxError");
});

await check("execute_js timeout", async () => {
  const [o, isErr] = await js({ code: "while (true) {}", timeoutMs: 300 });
  jsFailed(o, isErr, "TimeoutError: execution exceeded 300ms: raise timeoutMs (at most 10000)");
});

await check("execute_js memory kill", async () => {
  const [o, isErr] = await js({ code: "const a = []; while (true) a.push(new Array(1e5).fill({x: 1}))", memoryMb: 16, timeoutMs: 10000 });
  jsFailed(o, isErr, "MemoryLimitError");
});

await check("execute_js bridge", async () => {
  const mounts = [{ hostPath: data, sandboxPath: "/mnt/data" }];
  const [o] = await js({ code: "(await host.readFile('/mnt/data/a.txt')) + (await host.listDir('/mnt/data')).join(',')", mounts });
  assert.equal(o.result, "alpha\na.txt,sub");
  assert.equal(o.readBytes, 6);
  const [w, isErr] = await js({ code: "await host.writeFile('/mnt/data/x.txt', 'no')", mounts });
  jsFailed(w, isErr, "Error: writeFile: /mnt/data/x.txt");
  assert.match(w.error, /read-only/);
});

await check("execute_js invalid arguments", async () => {
  for (const [args, want] of [
    [{}, "invalid argument: code is required"],
    [{ code: 5 }, "invalid arguments: code: want a string, got number"],
    [{ code: "1", colour: "red" }, 'invalid arguments: unknown field "colour" (execute_js takes'],
    [{ code: "1", timeoutMs: 0 }, "invalid argument: timeoutMs must be between 1 and 10000, got 0"],
    [{ code: "1", memoryMb: 513 }, "invalid argument: memoryMb must be between 8 and 512, got 513"],
    [{ code: "1", mounts: [{ hostPath: data, sandboxPath: "/mnt/d", mode: "rwx" }] }, 'mounts[0]: invalid argument: mode "rwx"'],
    [{ code: "1", mounts: [{ hostPath: data, sandboxPath: "/mnt/d", writable: true }] }, 'invalid arguments: mounts[0]: unknown field "writable"'],
  ]) {
    const [o, isErr] = await js(args, { valid: false });
    jsFailed(o, isErr, want);
  }
});

function killedWith(o, isErr, prefix) {
  assert.ok(isErr, `want a tool error: ${JSON.stringify(o)}`);
  assert.equal(o.killed, true);
  assert.ok(o.stderr.startsWith(prefix), `stderr ${JSON.stringify(o.stderr.slice(0, 200))}, want it to start with ${prefix}`);
}

await check("exec_command ok", async () => {
  const [o, isErr] = await exec({ command: ["echo", "hi"] });
  assert.ok(!isErr);
  assert.deepEqual([o.stdout, o.stderr, o.exitCode, o.killed], ["hi\n", "", 0, false]);
}, { needsExec: true });

await check("exec_command non-zero exit", async () => {
  const [o, isErr] = await exec({ command: ["sh", "-c", "echo out; echo err >&2; exit 3"] });
  assert.ok(!isErr, "a non-zero exit is an ordinary result");
  assert.deepEqual([o.stdout, o.stderr, o.exitCode], ["out\n", "err\n", 3]);
}, { needsExec: true });

await check("exec_command signal", async () => {
  const [o] = await exec({ command: ["sh", "-c", "kill -KILL $$"] });
  assert.equal(o.signal, "SIGKILL");
  assert.equal(o.killed, false);
}, { needsExec: true });

await check("exec_command spawn failure", async () => {
  const [o, isErr] = await exec({ command: ["/nonexistent/program"] });
  assert.ok(isErr);
  assert.equal(o.exitCode, null);
  assert.match(o.error, /nonexistent\/program/);
  assert.ok(o.stderr.startsWith(o.error));
}, { needsExec: true });

await check("exec_command timeout", async () => {
  const [o, isErr] = await exec({ command: ["sleep", "10"], timeoutMs: 300 });
  // What a model reads: the parameter to raise, how far, and yieldMs for more.
  killedWith(o, isErr, "killed: timeout after 300ms: raise timeoutMs (at most 600000 without yieldMs), or pass yieldMs (e.g. 10000) to keep a longer job running as a session, driven with exec_session (its timeoutMs up to 3600000)\n");
}, { needsExec: true });

await check("exec_command memory kill", async () => {
  const mounts = [{ hostPath: env.AUTOBOX_PROBE, sandboxPath: "/mnt/tools" }];
  const [o, isErr] = await exec({ command: ["/mnt/tools/probe", "hog", "200"], memoryMb: 64, timeoutMs: 10000, mounts });
  killedWith(o, isErr, "memory limit exceeded");
}, { needsExec: true });

await check("exec_command truncated output", async () => {
  const [o] = await exec({ command: ["sh", "-c", "head -c 400000 /dev/zero | tr '\\0' x; head -c 100000 /dev/zero | tr '\\0' y >&2"] });
  assert.equal(o.stdoutTruncated, true);
  assert.equal(o.stderrTruncated, true);
  assert.ok(o.stdout.endsWith("[autobox: stdout truncated at 262144 bytes]"));
}, { needsExec: true });

await check("exec_command non-UTF-8 output", async () => {
  const [o] = await exec({ command: ["sh", "-c", "printf 'a\\377b'"] });
  assert.equal(o.stdout, "a\uFFFDb");
  assert.equal(o.stdoutEncoding, "utf-8-lossy");
}, { needsExec: true });

// env as models write it: an object (as MCP client configs have it) or a list of
// NAME=VALUE, one meaning. The input schema gives the list (a parameter has one
// type there, for clients that draw forms) and its description the object form,
// which the server takes all the same.
await check("exec_command env as an object", async () => {
  const command = ["sh", "-c", 'echo "$CI $NODE_ENV"'];
  const [list] = await exec({ command, env: ["CI=1", "NODE_ENV=test"] });
  const [obj, isErr] = await exec({ command, env: { CI: "1", NODE_ENV: "test" } }, { valid: false });
  assert.equal(list.stdout, "1 test\n");
  assert.ok(!isErr && obj.stdout === list.stdout, JSON.stringify(obj));
}, { needsExec: true });

// Limits that end in an error of the system say which limit or mount it was.
await check("notes on limits and mounts", async () => {
  const dir = fixture("notes", { "keep": "" });
  fs.chmodSync(dir, 0o777); // a root server without namespaces runs commands as nobody
  const out = path.join(dir, "out.txt");
  const [o] = await exec({ command: ["sh", "-c", `echo hi > ${out}`] });
  assert.ok(o.exitCode !== 0 && o.stderr.includes(`[autobox: ${out} is not in this call's mounts`), JSON.stringify(o));
  // Mounted, the command writes through the sandboxPath; the host path works
  // only where the paths are rewritten, and where they are not a note says
  // where the command sees it.
  const mounts = [{ hostPath: dir, sandboxPath: "/mnt/n", mode: "rw" }];
  const [m] = await exec({ command: ["sh", "-c", "echo hi > /mnt/n/out.txt"], mounts });
  assert.ok(m.exitCode === 0 && !m.stderr.includes("[autobox:") && fs.readFileSync(out, "utf8") === "hi\n", JSON.stringify(m));
  const [h] = await exec({ command: ["sh", "-c", `echo hi > ${out}`], mounts });
  if (h.mountPaths === "bound at sandboxPath") {
    assert.ok(h.exitCode !== 0 && h.stderr.includes(`${out} is at /mnt/n/out.txt`), JSON.stringify(h));
  } else {
    assert.ok(h.mountPaths === "rewritten to hostPath" && h.exitCode === 0, JSON.stringify(h));
  }
  const [j] = await js({ code: "require('fs')" });
  assert.match(j.error, /require is not defined \(execute_js runs standard JavaScript in a bare V8 isolate/);
}, { needsExec: true });

// allowHosts localhost:PORT: the host's port at the command's own localhost, for
// a program that ignores the proxy variables (bash's /dev/tcp).
await check("the host's port at the command's localhost", async () => {
  const net = await import("node:net");
  const server = net.createServer((c) => c.end("from the host\n"));
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  try {
    const port = server.address().port;
    const [o, isErr] = await exec({ command: ["bash", "-c", `unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy; exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`], allowHosts: [`localhost:${port}`] });
    if (isErr && /network namespace/.test(o.error ?? "")) throw new Skip(o.error);
    assert.equal(o.stdout, "from the host\n", JSON.stringify(o));
    assert.ok(o.network.allowed.some((a) => a.host === "localhost" && a.port === port), JSON.stringify(o.network));
  } finally {
    server.close();
  }
}, { needsExec: true });

await check("exec_command mounts and cwd", async () => {
  const [o] = await exec({ command: ["cat", "a.txt", "/mnt/data/sub/b.txt"], mounts: [{ hostPath: data, sandboxPath: "/mnt/data", mode: "ro" }], cwd: "/mnt/data" });
  assert.equal(o.stdout, "alpha\nbeta\n");
}, { needsExec: true });

await check("exec_command invalid arguments", async () => {
  for (const [args, want] of [
    [{}, "invalid argument: command is required"],
    [{ command: "ls -la" }, "invalid arguments: command: want an array, got string"],
    [{ command: ["ls"], verbose: true }, 'invalid arguments: unknown field "verbose" (exec_command takes'],
    [{ command: ["true"], memoryMb: 1 }, "invalid argument: memoryMb must be between 16 and 2048, got 1"],
    [{ command: ["true"], timeoutMs: 1.5 }, "invalid arguments: timeoutMs: want an integer, got number 1.5"],
    [{ command: ["pwd"], cwd: "/etc" }, "invalid argument: cwd must be inside a declared mount"],
  ]) {
    const [o, isErr] = await exec(args, { valid: false });
    assert.ok(isErr, JSON.stringify(args));
    assert.equal(o.exitCode, null);
    assert.ok(o.error.startsWith(want), `error ${JSON.stringify(o.error)}, want ${want}`);
    assert.equal(o.stderr, o.error);
  }
});

await check("exec_command session", async () => {
  const [o, isErr] = await exec({ command: ["sh", "-c", "echo one; sleep 0.5; echo two; exit 3"], yieldMs: 0, timeoutMs: 60000 });
  assert.ok(!isErr, JSON.stringify(o));
  assert.equal(o.running, true);
  assert.equal(o.exitCode, null);
  assert.match(o.sessionId, /^s-/);
  const [f, fErr, out] = await finish(o.sessionId, o.stdout);
  assert.ok(!fErr, JSON.stringify(f));
  assert.deepEqual([out, f.exitCode, f.killed, f.running], ["one\ntwo\n", 3, false, undefined]);
  const [gone, goneErr] = await session({ sessionId: o.sessionId, action: "poll" });
  assert.ok(goneErr && gone.exitCode === null && gone.error.startsWith("unknown or ended session"), JSON.stringify(gone));
  // A command that ends within yieldMs (and prints nothing, so that no pause
  // of its output answers first) gives the ordinary result.
  const [quick, quickErr] = await exec({ command: ["sh", "-c", "exit 3"], yieldMs: 10000 });
  assert.ok(!quickErr);
  assert.deepEqual([quick.exitCode, quick.running, quick.sessionId], [3, undefined, undefined]);
}, { needsExec: true });

await check("exec_session write, signal, list, close", async () => {
  const [o] = await exec({ command: ["cat"], yieldMs: 0, timeoutMs: 60000 });
  const [w, wErr] = await session({ sessionId: o.sessionId, action: "write", input: "hi\n", yieldMs: 5000 });
  assert.ok(!wErr);
  assert.deepEqual([w.stdout, w.running], ["hi\n", true]);
  const [l] = await session({ action: "list" });
  assert.deepEqual(l.sessions.filter((x) => x.sessionId === o.sessionId).map((x) => [x.command, x.state, x.tty]), [["cat", "running", false]]);
  const [c, cErr] = await session({ sessionId: o.sessionId, action: "close" });
  assert.ok(!cErr, "close is not an error");
  assert.equal(c.killed, true);
  assert.ok(c.stderr.startsWith("killed: session closed"), c.stderr);
  const [t] = await exec({ command: ["sh", "-c", "trap 'echo caught; exit 5' INT; echo ready; while :; do sleep 0.1; done"], yieldMs: 5000, timeoutMs: 60000 });
  assert.equal(t.stdout, "ready\n");
  const [g] = await session({ sessionId: t.sessionId, action: "signal", signal: "INT", yieldMs: 5000 });
  const [f, , out] = g.running ? await finish(t.sessionId, g.stdout) : [g, false, g.stdout];
  assert.deepEqual([out, f.exitCode], ["caught\n", 5]);
}, { needsExec: true });

await check("exec_session tty", async () => {
  const [o] = await exec({ command: ["sh", "-i"], tty: true, rows: 30, cols: 100, yieldMs: 2000, timeoutMs: 60000 });
  assert.equal(o.running, true);
  let out = "";
  let [w] = await session({ sessionId: o.sessionId, action: "write", input: "stty size; echo $((6*7))\n", yieldMs: 5000 });
  out += w.stdout;
  for (let i = 0; i < 10 && !out.includes("42"); i++) {
    [w] = await session({ sessionId: o.sessionId, action: "poll", yieldMs: 2000 });
    out += w.stdout;
  }
  assert.match(out, /30 100\r\n42\r\n/);
  const [c] = await session({ sessionId: o.sessionId, action: "close" });
  assert.equal(c.killed, true);
}, { needsExec: true });

await check("exec_session invalid arguments", async () => {
  for (const [args, want] of [
    [{ action: "poll", sessionId: "s-nothing" }, 'unknown or ended session "s-nothing"'],
    [{ action: "poll" }, "invalid argument: poll needs sessionId"],
    [{ action: "explode", sessionId: "x" }, 'invalid argument: action "explode" is not poll, write, signal, close or list'],
    [{ action: "list", verbose: true }, 'invalid arguments: unknown field "verbose" (exec_session takes'],
    [{ action: "signal", sessionId: "x", signal: "STOP" }, 'invalid argument: signal "STOP" is not INT, TERM or KILL'],
  ]) {
    const [o, isErr] = await session(args, { valid: false });
    assert.ok(isErr, JSON.stringify(args));
    assert.equal(o.exitCode, null);
    assert.ok(o.error.startsWith(want), `error ${JSON.stringify(o.error)}, want ${want}`);
    assert.equal(o.stderr, o.error);
  }
});

await check("copy_then_sync lifecycle", async () => {
  const src = fixture("project", { "hello.txt": "hello\n", "old.txt": "old\n" });
  const [c, cErr] = await ws({ action: "create", hostPath: src, sandboxPath: "/mnt/project", storagePath: fixture("storage", {}), copyMode: "auto" });
  assert.ok(!cErr && c.ok, JSON.stringify(c));
  assert.equal(c.mount.workspaceId, c.workspaceId);
  assert.equal(c.clonedFiles + c.copiedFiles, 2);
  const mounts = [{ workspaceId: c.workspaceId }];
  const [e] = await js({ code: "await host.writeFile('/mnt/project/new.txt', 'new'); await host.writeFile('/mnt/project/hello.txt', 'changed\\n'); 1", mounts });
  assert.ok(e.ok, JSON.stringify(e));
  const [st] = await ws({ action: "status", workspaceId: c.workspaceId });
  assert.ok(st.ok);
  assert.deepEqual(st.changes.map((ch) => `${ch.action} ${ch.path}`).sort(), ["add new.txt", "modify hello.txt"]);
  assert.deepEqual(st.conflicts, []);
  assert.equal(fs.readFileSync(path.join(src, "hello.txt"), "utf8"), "hello\n", "the source changed before sync");
  const [sy, syErr] = await ws({ action: "sync", workspaceId: c.workspaceId });
  assert.ok(!syErr && sy.ok, JSON.stringify(sy));
  assert.equal(sy.applied.length, 2);
  assert.equal(fs.readFileSync(path.join(src, "hello.txt"), "utf8"), "changed\n");
  const [d, dErr] = await ws({ action: "discard", workspaceId: c.workspaceId });
  assert.ok(!dErr && d.ok);
  const [gone, goneErr] = await ws({ action: "status", workspaceId: c.workspaceId });
  assert.ok(goneErr && !gone.ok && /not found/.test(gone.error), JSON.stringify(gone));
});

await check("copy_then_sync conflicts", async () => {
  const src = fixture("conflicted", { "a.txt": "base\n" });
  const [c] = await ws({ action: "create", hostPath: src, sandboxPath: "/mnt/c", storagePath: fixture("storage2", {}), copyMode: "auto" });
  await js({ code: "await host.writeFile('/mnt/c/a.txt', 'workspace\\n')", mounts: [{ workspaceId: c.workspaceId }] });
  fs.writeFileSync(path.join(src, "a.txt"), "host\n");
  const [st] = await ws({ action: "status", workspaceId: c.workspaceId });
  assert.equal(st.conflicts.length, 1, JSON.stringify(st));
  const [sy, isErr] = await ws({ action: "sync", workspaceId: c.workspaceId });
  assert.ok(isErr && sy.ok === false, JSON.stringify(sy));
  assert.equal(sy.conflicts[0].path, "a.txt");
  assert.deepEqual(sy.applied, []);
  assert.equal(fs.readFileSync(path.join(src, "a.txt"), "utf8"), "host\n");
  await ws({ action: "discard", workspaceId: c.workspaceId });
});

await check("copy_then_sync invalid arguments", async () => {
  for (const [args, want] of [
    [{ action: "explode" }, 'invalid argument: action "explode" is not create, status, sync, resolve, merge or discard'],
    [{ action: 1 }, "invalid arguments: action: want a string, got number"],
    [{ action: "create", sandboxPath: "/mnt/p" }, "invalid argument: create needs hostPath and sandboxPath"],
    [{ action: "status" }, "invalid argument: status needs workspaceId"],
    [{ action: "sync", workspaceId: "x", hostPath: data }, "invalid argument: sync takes workspaceId, paths, includeIgnored, not hostPath"],
    [{ action: "create", hostPath: data, sandboxPath: "/mnt/p", copyMode: "yolo" }, "copyMode"],
    [{ action: "create", hostPath: data, sandboxPath: "/mnt/p", id: "x" }, 'invalid arguments: unknown field "id" (copy_then_sync takes'],
  ]) {
    const [o, isErr] = await ws(args, { valid: false });
    assert.ok(isErr && o.ok === false, JSON.stringify(o));
    assert.ok(o.error.includes(want), `error ${JSON.stringify(o.error)}, want ${want}`);
  }
});

// Issue 22, an agent's day, through this client: environment and caches, errors
// that say what to do, ended sessions, and workspaces reviewed, merged, synced in
// part, and held by a session.
await check("exec_command env and caches", async () => {
  const [o, isErr] = await exec({ command: ["sh", "-c", 'echo "$CI-$NODE_ENV"; echo kept > "$npm_config_cache/marker"'], env: ["CI=1", "NODE_ENV=test"], caches: ["npm"] });
  assert.ok(!isErr && o.exitCode === 0 && o.stdout === "1-test\n", JSON.stringify(o));
  const [again] = await exec({ command: ["sh", "-c", 'cat "$npm_config_cache/marker"'], caches: ["npm"] });
  assert.equal(again.stdout, "kept\n", JSON.stringify(again));
  const [refused, refusedErr] = await exec({ command: ["true"], env: ["HOME=/root"] }, { valid: false });
  assert.ok(refusedErr && /HOME/.test(refused.error), JSON.stringify(refused));
}, { needsExec: true });

await check("errors that say what to do", async () => {
  const [j, jErr] = await js({ code: "await fetch('http://example.com/')" });
  assert.ok(jErr && /pass allowHosts/.test(j.error), JSON.stringify(j));
  if (canExec && fs.existsSync("/usr/bin/curl")) {
    const [o] = await exec({ command: ["curl", "-sS", "--max-time", "3", "http://192.0.2.1/"] });
    assert.ok(o.exitCode !== 0 && /this call has no network/.test(o.stderr), JSON.stringify(o));
  }
  if (canExec) {
    // A tree held at maxProcesses: the result names the limit, whoever ended it.
    const [o] = await exec({ command: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 2 & done; wait"], maxProcesses: 4, timeoutMs: 10000 });
    assert.ok(/maxProcesses|process limit/.test(o.stderr), JSON.stringify(o));
  }
});

await check("exec_session ended at once", async () => {
  const [o] = await exec({ command: ["sh", "-c", "sleep 0.2; echo bye >&2; exit 4"], yieldMs: 0, timeoutMs: 60000 });
  assert.equal(o.running, true);
  const [f, , out] = await finish(o.sessionId, o.stdout);
  assert.deepEqual([f.exitCode, f.running, out], [4, undefined, ""], JSON.stringify(f));
  assert.ok(f.durationMs < 5000, `durationMs ${f.durationMs} for a command of 0.2 s`);
}, { needsExec: true });

await check("copy_then_sync review, merge, sync in part", async () => {
  const src = fixture("review", { "a.txt": "one\ntwo\nthree\nfour\nfive\n", "b.txt": "b\n" });
  const [c] = await ws({ action: "create", hostPath: src, sandboxPath: "/mnt/r", storagePath: fixture("storage3", {}), copyMode: "auto" });
  assert.ok(c.ok && c.copyMode === "auto" && ["copy", "clone", "clone and copy"].includes(c.copiedBy), JSON.stringify(c));
  const mounts = [{ workspaceId: c.workspaceId }];
  await js({ code: "await host.writeFile('/mnt/r/a.txt', 'ONE\\ntwo\\nthree\\nfour\\nfive\\n'); await host.writeFile('/mnt/r/b.txt', 'B\\n'); 1", mounts });
  fs.writeFileSync(path.join(src, "a.txt"), "one\ntwo\nthree\nfour\nFIVE\n");
  const [st] = await ws({ action: "status", workspaceId: c.workspaceId, diff: true });
  assert.ok(st.diff.includes("-b\n+B\n"), JSON.stringify(st.diff));
  assert.equal(st.conflicts.length, 1);
  assert.ok(st.conflicts[0].path === "a.txt" && /"merge"/.test(st.conflicts[0].reason), JSON.stringify(st.conflicts));
  // b.txt alone: a.txt stays pending, its conflict does not block b.
  const [part, partErr] = await ws({ action: "sync", workspaceId: c.workspaceId, paths: ["b.txt"] });
  assert.ok(!partErr && part.ok, JSON.stringify(part));
  assert.equal(fs.readFileSync(path.join(src, "b.txt"), "utf8"), "B\n");
  assert.equal(fs.readFileSync(path.join(src, "a.txt"), "utf8"), "one\ntwo\nthree\nfour\nFIVE\n");
  const [m, mErr] = await ws({ action: "merge", workspaceId: c.workspaceId, paths: ["a.txt"] });
  assert.ok(!mErr && m.ok && m.merged.includes("a.txt"), JSON.stringify(m));
  const [rest, restErr] = await ws({ action: "sync", workspaceId: c.workspaceId });
  assert.ok(!restErr && rest.ok, JSON.stringify(rest));
  assert.equal(fs.readFileSync(path.join(src, "a.txt"), "utf8"), "ONE\ntwo\nthree\nfour\nFIVE\n");
  const [bad, badErr] = await ws({ action: "sync", workspaceId: c.workspaceId, paths: ["../etc"] }, { valid: false });
  assert.ok(badErr && /paths\[0\]/.test(bad.error), JSON.stringify(bad));
  await ws({ action: "discard", workspaceId: c.workspaceId });
});

await check("copy_then_sync held by a session", async () => {
  const src = fixture("held", { "x.txt": "x\n" });
  const [c] = await ws({ action: "create", hostPath: src, sandboxPath: "/mnt/h", storagePath: fixture("storage4", {}), copyMode: "auto" });
  const [s] = await exec({ command: ["sh", "-c", "echo y > /mnt/h/x.txt; echo ready; exec sleep 600"], mounts: [{ workspaceId: c.workspaceId }], yieldMs: 5000, timeoutMs: 60000 });
  assert.ok(s.running && s.stdout === "ready\n", JSON.stringify(s));
  const [held, heldErr] = await ws({ action: "sync", workspaceId: c.workspaceId });
  assert.ok(heldErr && held.error.includes(s.sessionId), JSON.stringify(held));
  await session({ sessionId: s.sessionId, action: "close" });
  const [sy, syErr] = await ws({ action: "sync", workspaceId: c.workspaceId });
  assert.ok(!syErr && sy.ok, JSON.stringify(sy));
  assert.equal(fs.readFileSync(path.join(src, "x.txt"), "utf8"), "y\n");
  await ws({ action: "discard", workspaceId: c.workspaceId });
}, { needsExec: true });

// Network by host: the result's network record and a denial, with allowHosts
// (a server run as root gives commands the network namespace this needs; else
// exec_command refuses allowHosts, which is a result shape too).
await check("allowHosts records and denials", async () => {
  const [o, isErr] = await exec({ command: ["sh", "-c", "curl -sS -o /dev/null -w '%{http_code}' http://not-listed.example/; exit 3"], allowHosts: ["example.com"] });
  // Root, or an ordinary user with user namespaces, has network by host; a
  // host without namespaces refuses it.
  if (!isErr) {
    assert.ok(o.isolation === "namespaces" || o.isolation === "user-namespaces", JSON.stringify(o));
    assert.equal(o.stdout, "403", JSON.stringify(o));
    assert.equal(o.network.denied[0].reason, "not in allowHosts", JSON.stringify(o));
    assert.deepEqual(o.network.allowed, []);
  } else {
    assert.ok(isErr && o.exitCode === null && /network namespace/.test(o.error), JSON.stringify(o));
  }
  const [f] = await js({ code: "await fetch('http://not-listed.example/')", allowHosts: ["example.com"] });
  assert.ok(!f.ok && /not in allowHosts/.test(f.error), JSON.stringify(f));
  assert.equal(f.network.denied[0].host, "not-listed.example");
}, { needsExec: true });

// A dev server in a session: a later call reaches it by naming its port
// (session:ID:PORT), the client process by the host port it exposes, and
// neither once the session ends. Without namespaces both are refused.
await check("dev server session ports", async () => {
  if (!fs.existsSync("/usr/bin/python3")) throw new Skip("python3 is not installed: the dev server is python3 -m http.server");
  const site = fixture("site", { "index.html": "hello from the session\n" });
  const [o, isErr] = await exec({
    command: ["python3", "-u", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/mnt/site"],
    mounts: [{ hostPath: site, sandboxPath: "/mnt/site", mode: "ro" }], expose: [8000], yieldMs: 3000, timeoutMs: 120000,
  });
  if (isErr) {
    assert.ok(o.exitCode === null && /network namespace of its own/.test(o.error), JSON.stringify(o));
    return;
  }
  assert.equal(o.running, true, JSON.stringify(o));
  assert.equal(o.ports.length, 1, JSON.stringify(o));
  assert.equal(o.ports[0].port, 8000);
  assert.match(o.ports[0].url, /^http:\/\/127\.0\.0\.1:\d+$/);
  let c;
  for (let i = 0; i < 50; i++) {
    [c] = await exec({ command: ["curl", "-sS", "--max-time", "5", "http://localhost:8000/"], allowHosts: [`session:${o.sessionId}:8000`], timeoutMs: 10000 });
    if (c.stdout !== "") break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(c.stdout, "hello from the session\n", JSON.stringify(c));
  const [d] = await exec({ command: ["curl", "-sS", "--max-time", "5", "http://localhost:8000/"], timeoutMs: 10000 });
  assert.ok(d.exitCode !== 0 && !d.stdout.includes("hello"), JSON.stringify(d));
  const body = await (await fetch(o.ports[0].url)).text();
  assert.equal(body, "hello from the session\n");
  await session({ sessionId: o.sessionId, action: "close" });
  await assert.rejects(fetch(o.ports[0].url));
}, { needsExec: true });

await check("progress token", async () => {
  const res = await call("execute_js", { code: "6*7" }, { options: { onprogress: () => {} } });
  assert.equal(res.structuredContent.result, 42);
});

// progressed runs a tool call with a progress token; at each notification whose
// message is a key of steps, it does what that key says (once). It returns the
// result's structured content and the notifications.
async function progressed(name, args, steps) {
  const got = [];
  const res = await call(name, args, { options: { onprogress: (p) => {
    got.push(p);
    const step = steps[p.message];
    if (step) { delete steps[p.message]; step(); }
  } } });
  assert.deepEqual(Object.keys(steps), [], `no notification with message ${Object.keys(steps)}: ${JSON.stringify(got)}`);
  for (let i = 1; i < got.length; i++) assert.ok(got[i].progress > got[i - 1].progress, `progress not rising: ${JSON.stringify(got)}`);
  return [res.structuredContent, got];
}

// What a model's client sees of a long command while it runs: the latest line
// of its output, each step released only once the client has seen the one before.
await check("progress of a running command", async () => {
  const dir = fixture("progress", { "started": "" });
  fs.chmodSync(dir, 0o777); // a root server without namespaces runs commands as nobody
  const mounts = [{ hostPath: dir, sandboxPath: "/mnt/p", mode: "rw" }];
  const waitFor = (f) => `while [ ! -e /mnt/p/${f} ]; do sleep 0.05; done`;
  const touch = (f) => () => fs.writeFileSync(path.join(dir, f), "");
  const [o, got] = await progressed("exec_command", {
    command: ["sh", "-c", `echo compiling; echo "step 1 of 2"; ${waitFor("go")}; echo "step 2 of 2"`], mounts, timeoutMs: 90000,
  }, { "step 1 of 2": touch("go") });
  assert.equal(o.stdout, "compiling\nstep 1 of 2\nstep 2 of 2\n");
  assert.ok(got.every((p) => p.total === 90), `total is not the time limit in seconds: ${JSON.stringify(got)}`);
  // A poll with yieldMs waits through bursts, reporting each, and answers with
  // what came in that time.
  const [st] = await exec({ command: ["sh", "-c", `echo a; ${waitFor("go-a")}; echo b; ${waitFor("go-b")}; echo end`], mounts, yieldMs: 0, timeoutMs: 120000 });
  assert.ok(st.running, JSON.stringify(st));
  const [p] = await progressed("exec_session", { sessionId: st.sessionId, action: "poll", yieldMs: 30000 }, { a: touch("go-a"), b: touch("go-b") });
  assert.ok(!p.running && p.exitCode === 0, JSON.stringify(p));
  assert.equal(st.stdout + p.stdout, "a\nb\nend\n");
}, { needsExec: true });

await check("cancel execute_js with AbortSignal", async () => {
  const ac = new AbortController();
  const pending = client.callTool({ name: "execute_js", arguments: { code: "while (true) {}", timeoutMs: 10000 } }, undefined, { signal: ac.signal });
  setTimeout(() => ac.abort("the test cancels"), 300);
  const e = await rejected(pending);
  assert.match(String(e), /the test cancels/, "rejected, but not by the abort");
  const [o] = await js({ code: "6*7" });
  assert.equal(o.result, 42);
});

await check("cancel exec_command with AbortSignal", async () => {
  const argv = ["sleep", (27 + Math.random()).toFixed(6)]; // no other run's sleep matches
  const ac = new AbortController();
  const pending = client.callTool({ name: "exec_command", arguments: { command: argv, timeoutMs: 30000 } }, undefined, { signal: ac.signal });
  await until("the command starts", () => processes(argv).length > 0);
  ac.abort("the test cancels");
  assert.match(String(await rejected(pending)), /the test cancels/, "rejected, but not by the abort");
  await until("the cancelled command ends", () => processes(argv).length === 0);
}, { needsExec: true });

await check("oversized request", async () => {
  const code = "'" + "a".repeat(9 << 20) + "'.length";
  const e = await rejected(client.callTool({ name: "execute_js", arguments: { code } }, undefined, { timeout: 60000 }));
  assert.ok(e instanceof McpError, `not an McpError: ${e}`);
  assert.equal(e.code, ErrorCode.InvalidRequest, `${e}`);
  assert.match(e.message, /more than 8388608 bytes/);
  assert.deepEqual(await client.ping(), {});
});

await client.close();
console.log(JSON.stringify({ done: true, validations }));

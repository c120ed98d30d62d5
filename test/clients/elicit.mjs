// Asking the user through the official TypeScript MCP SDK client: a server with a
// ceiling file that allows mounting one directory read-only, and execute_js calls
// that write a file through a read-write mount of another. The client's
// elicitation handler answers each way (once, session, always, decline), never
// answers (the server's --ask-timeout), or the client declares no elicitation;
// the file is written only when the user said yes.
//
// Run by test/clients_test.go, which sets AUTOBOX_BIN, AUTOBOX_FIXTURES (an empty
// directory this script may fill) and the server's environment (HOME, TMPDIR,
// AUTOBOX_STATE_DIR, XDG_DATA_HOME, XDG_CONFIG_HOME).
//
// Output: one JSON line per case, {"case", "status": "pass"|"fail", "detail"},
// then {"done": true}.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { accept, check, newEra, unanswered } from "./asking.mjs";

const fixtures = process.env.AUTOBOX_FIXTURES;

let n = 0;
// fixture makes a ceiling file, a directory it allows and one beyond it.
function fixture() {
  const dir = path.join(fixtures, `f${n++}`);
  const allowed = path.join(dir, "allowed");
  const beyond = path.join(dir, "beyond");
  fs.mkdirSync(allowed, { recursive: true });
  fs.mkdirSync(beyond, { recursive: true });
  const policy = path.join(dir, "policy.json");
  fs.writeFileSync(policy, JSON.stringify({ mounts: [{ path: allowed, mode: "ro" }] }));
  return { policy, allowed, beyond: fs.realpathSync(beyond) };
}

function writeCall(f, name) {
  return {
    name: "execute_js",
    arguments: {
      code: `host.writeFile("/mnt/b/${name}", "x"); "written"`,
      mounts: [{ hostPath: f.beyond, sandboxPath: "/mnt/b", mode: "rw" }],
    },
  };
}

async function write(c, f, name) {
  const res = await c.client.callTool(writeCall(f, name), undefined, { timeout: 60000 });
  return { res, written: fs.existsSync(path.join(f.beyond, name)) };
}

function wantRan(r) {
  assert.ok(!r.res.isError, JSON.stringify(r.res.structuredContent));
  assert.equal(r.res.structuredContent.result, "written");
  assert.ok(r.written, "the file was not written");
}

function wantRefused(r, why) {
  assert.equal(r.res.isError, true, JSON.stringify(r.res.structuredContent));
  const err = r.res.structuredContent.error;
  assert.match(err, /"mounts" rule/);
  assert.ok(err.includes(why), `${err} does not say ${why}`);
  assert.ok(!r.written, "a refused call wrote its file");
}

// checkF runs one case with a fixture of its own: fn(f, connect), where
// connect(answer, extraArgs) starts a server with f's ceiling file.
function checkF(name, fn) {
  const f = fixture();
  return check(name, (connect) => fn(f, (...a) => connect(f.policy, ...a)));
}

await checkF("accept once", async (f, connect) => {
  const c = await connect(accept("once"));
  wantRan(await write(c, f, "a"));
  assert.equal(c.questions.length, 1);
  const q = c.questions[0];
  assert.ok(q.message.includes(`mount ${f.beyond} read-write`), q.message);
  assert.deepEqual(q.requestedSchema.properties.answer.enum, ["once", "session", "always", "no"]);
  wantRan(await write(c, f, "b")); // asked again
  assert.equal(c.questions.length, 2);
});

await checkF("accept for the session", async (f, connect) => {
  let answer = "session";
  const c = await connect(() => ({ action: "accept", content: { answer } }));
  wantRan(await write(c, f, "a"));
  answer = "no";
  wantRan(await write(c, f, "b")); // remembered: not asked
  assert.equal(c.questions.length, 1);
  assert.ok(!fs.readFileSync(f.policy, "utf8").includes(f.beyond), "a session answer was written to the file");
});

await checkF("always", async (f, connect) => {
  const c = await connect(accept("always"));
  wantRan(await write(c, f, "a"));
  const file = JSON.parse(fs.readFileSync(f.policy, "utf8"));
  assert.ok(file.mounts.some((m) => m.path === f.beyond && m.mode === "rw"), JSON.stringify(file));
  assert.ok(file.mounts.some((m) => m.path === f.allowed), JSON.stringify(file));
  const other = await connect(undefined); // a new server reads it; no one to ask
  wantRan(await write(other, f, "b"));
});

await checkF("decline", async (f, connect) => {
  const c = await connect(() => ({ action: "decline" }));
  wantRefused(await write(c, f, "a"), "the user declined");
  const no = await connect(accept("no"));
  wantRefused(await write(no, f, "b"), "the user answered no");
});

await checkF("no answer before the timeout", async (f, connect) => {
  const c = await connect(unanswered(3000), ["--ask-timeout", "1s"]);
  const r = await write(c, f, "a");
  if (newEra) {
    // The retry came too late: the call was ended meanwhile, and says why.
    assert.equal(r.res.isError, true, JSON.stringify(r.res.structuredContent));
    assert.match(r.res.structuredContent.error, /the client did not retry the call with the user's answer within 1s/);
    assert.ok(!r.written, "a call ended unanswered wrote its file");
  } else {
    wantRefused(r, "the user did not answer within 1s");
  }
  const ok = await c.client.callTool({ name: "execute_js", arguments: { code: "6*7" } });
  assert.equal(ok.structuredContent.result, 42);
});

await checkF("client without elicitation", async (f, connect) => {
  const c = await connect(undefined);
  wantRefused(await write(c, f, "a"), "only an MCP client that supports elicitation can ask them");
});

console.log(JSON.stringify({ done: true }));

// Asking the user about a host a running command wants, through the official
// TypeScript MCP SDK client: exec_command runs curl against a local server its
// allowHosts does not list, and the proxy holds the connection while the
// client's elicitation handler answers each way (once, session, always,
// decline), never answers (the server's --ask-timeout, shorter than nothing
// the command could wait out on its own timeoutMs), or the client declares no
// elicitation; and execute_js's fetch, asked the same way.
//
// Run by test/clients_test.go, which sets AUTOBOX_BIN, AUTOBOX_FIXTURES (an
// empty directory this script may fill) and the server's environment.
//
// Output: one JSON line per case, {"case", "status": "pass"|"fail", "detail"},
// then {"done": true}.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { accept, check, newEra, unanswered } from "./asking.mjs";

const env = process.env;

// serve answers every request with body, on a port of 127.0.0.1.
async function serve(body) {
  const srv = http.createServer((req, res) => res.end(body));
  await new Promise((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return { srv, hp: `127.0.0.1:${srv.address().port}`, port: srv.address().port };
}
const listed = await serve("listed");
const other = await serve("other");

let n = 0;
function policyFile(text) {
  const dir = path.join(env.AUTOBOX_FIXTURES, `f${n++}`);
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, "policy.json");
  fs.writeFileSync(p, text);
  return p;
}

// curl runs curl against other with only listed in allowHosts.
async function curl(c, extra = {}) {
  const res = await c.client.callTool({
    name: "exec_command",
    arguments: { command: ["curl", "-sS", `http://${other.hp}/`], allowHosts: [listed.hp], timeoutMs: 30000, ...extra },
  }, undefined, { timeout: 60000 });
  return res.structuredContent;
}

function wantReached(o) {
  assert.equal(o.exitCode, 0, JSON.stringify(o));
  assert.equal(o.stdout, "other", JSON.stringify(o));
}

function wantDenied(o, why) {
  assert.equal(o.exitCode, 0, JSON.stringify(o)); // curl prints the proxy's 403
  assert.ok(o.stdout.includes(`autobox: connection to ${other.hp} denied: port ${other.port} not allowed; ${why}`), o.stdout);
  assert.ok(o.stdout.includes(`allowHosts needs "${other.hp}"`), o.stdout);
  assert.ok(o.network.denied.some((d) => d.port === other.port && d.reason.includes(why)), JSON.stringify(o.network));
}

await check("accept once", async (connect) => {
  let answer = "once";
  const c = await connect(policyFile("{}"), () => ({ action: "accept", content: { answer } }));
  wantReached(await curl(c));
  assert.equal(c.questions.length, 1);
  const q = c.questions[0];
  assert.ok(q.message.includes(`reach ${other.hp}?`), q.message);
  assert.deepEqual(q.requestedSchema.properties.answer.enum, ["once", "session", "always", "no"]);
  answer = "no";
  wantDenied(await curl(c), "the user answered no"); // asked again
  assert.equal(c.questions.length, 2);
});

await check("accept for the session", async (connect) => {
  let answer = "session";
  const policy = policyFile("{}");
  const c = await connect(policy, () => ({ action: "accept", content: { answer } }));
  wantReached(await curl(c));
  answer = "no";
  wantReached(await curl(c)); // remembered: not asked
  assert.equal(c.questions.length, 1);
  assert.ok(!fs.readFileSync(policy, "utf8").includes(other.hp), "a session answer was written to the file");
});

await check("always", async (connect) => {
  const policy = policyFile(`{"limits": {"timeoutMs": 60000}}`);
  const c = await connect(policy, accept("always"));
  wantReached(await curl(c));
  const file = JSON.parse(fs.readFileSync(policy, "utf8"));
  assert.deepEqual(file.alwaysReach, [other.hp], JSON.stringify(file));
  assert.equal(file.limits.timeoutMs, 60000);
  const unasked = await connect(policy, undefined); // a new server reads it
  wantReached(await curl(unasked));
});

await check("decline", async (connect) => {
  const c = await connect(policyFile("{}"), () => ({ action: "decline" }));
  wantDenied(await curl(c), "the user declined");
});

await check("no answer before the timeout", async (connect) => {
  const c = await connect(policyFile("{}"), unanswered(4000), ["--ask-timeout", "2s"]);
  // The wait for the user is not the command's time: its timeoutMs is shorter.
  const o = await curl(c, { timeoutMs: 1000 });
  if (newEra) {
    // The retry came too late: the command waiting for it was ended.
    assert.equal(o.killed, true, JSON.stringify(o));
    assert.ok(o.stderr.includes("killed: call cancelled"), JSON.stringify(o));
  } else {
    wantDenied(o, "the user did not answer within 2s");
    assert.equal(o.killed, false, JSON.stringify(o));
  }
  // Positive control: listed, the same request gets through.
  wantReached(await curl(c, { timeoutMs: 1000, allowHosts: [listed.hp, other.hp] }));
});

await check("client without elicitation", async (connect) => {
  const c = await connect(policyFile("{}"), undefined);
  const o = await curl(c);
  assert.ok(o.network.denied.some((d) => d.port === other.port && d.reason === `port ${other.port} not allowed`), JSON.stringify(o.network));
  assert.notEqual(o.stdout, "other");
});

await check("execute_js fetch", async (connect) => {
  const c = await connect(policyFile("{}"), accept("once"));
  const res = await c.client.callTool({
    name: "execute_js",
    arguments: { code: `const r = await fetch("http://${other.hp}/"); await r.text()`, allowHosts: [listed.hp] },
  }, undefined, { timeout: 60000 });
  assert.equal(res.structuredContent.result, "other", JSON.stringify(res.structuredContent));
  assert.equal(c.questions.length, 1);
  assert.ok(c.questions[0].message.includes(`Let this JavaScript call (execute_js) reach ${other.hp}?`), c.questions[0].message);
});

listed.srv.close();
other.srv.close();
console.log(JSON.stringify({ done: true }));

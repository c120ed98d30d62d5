// What the scripts that answer the server's questions share (elicit.mjs,
// askreach.mjs): a server started with a ceiling file, a client whose
// elicitation handler answers as told, and cases reported one JSON line each.
//
// AUTOBOX_MCP_ERA chooses the client: unset or 2025-11-25, the TypeScript SDK
// v1 (@modelcontextprotocol/sdk), which the server asks with elicitation/create
// requests; 2026-07-28, the SDK v2 client (@modelcontextprotocol/client) pinned
// to that revision, which the server asks through multi round-trip requests
// (input_required, answered by retrying the call), the same handler answering.

import * as v1 from "@modelcontextprotocol/sdk/client/index.js";
import * as v1stdio from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import * as v2 from "@modelcontextprotocol/client";
import * as v2stdio from "@modelcontextprotocol/client/stdio";

const env = process.env;

// era is the protocol revision of the clients; newEra: 2026-07-28 or later.
export const era = env.AUTOBOX_MCP_ERA || "2025-11-25";
export const newEra = era >= "2026-07-28";

// unanswered is a handler of a user who does not answer in time: on the old
// era never (the server withdraws its request); on the new era late, after
// ms (the server cannot withdraw a question the client holds: the client
// retries once the user answers, too late).
export function unanswered(ms) {
  if (!newEra) return () => new Promise(() => {});
  return () => new Promise((resolve) => setTimeout(() => resolve({ action: "accept", content: { answer: "once" } }), ms));
}
const serverEnv = {};
for (const k of ["PATH", "HOME", "TMPDIR", "AUTOBOX_STATE_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME"]) {
  if (env[k] !== undefined) serverEnv[k] = env[k];
}

export function report(name, status, detail) {
  console.log(JSON.stringify({ case: name, status, detail }));
}

// connect starts a server with the ceiling file policy, and a client answering
// with answer(request) (undefined: a client without elicitation); questions
// keeps what it was asked.
export async function connect(policy, answer, extraArgs = []) {
  const params = { command: env.AUTOBOX_BIN, args: ["serve", "--policy", policy, ...extraArgs], env: serverEnv, stderr: "inherit" };
  const capabilities = answer ? { elicitation: { form: {} } } : {};
  const info = { name: "autobox-asking", version: "1" };
  const questions = [];
  const handle = async (req) => {
    questions.push(req.params);
    return answer(req);
  };
  let client;
  if (newEra) {
    client = new v2.Client(info, { capabilities, versionNegotiation: { mode: { pin: era } } });
    if (answer) client.setRequestHandler("elicitation/create", handle);
    await client.connect(new v2stdio.StdioClientTransport(params));
    if (client.getNegotiatedProtocolVersion() !== era) {
      throw new Error(`negotiated ${client.getNegotiatedProtocolVersion()}, want ${era}`);
    }
  } else {
    client = new v1.Client(info, { capabilities });
    if (answer) client.setRequestHandler(ElicitRequestSchema, handle);
    await client.connect(new v1stdio.StdioClientTransport(params));
  }
  return { client, questions };
}

export const accept = (answer) => () => ({ action: "accept", content: { answer } });

// check runs one case: fn(connect), whose servers are closed after it.
export async function check(name, fn) {
  const open = [];
  try {
    await fn(async (...a) => {
      const c = await connect(...a);
      open.push(c.client);
      return c;
    });
    report(name, "pass");
  } catch (e) {
    report(name, "fail", e && e.stack ? e.stack : String(e));
  } finally {
    for (const c of open) await c.close().catch(() => {});
  }
}

// What the scripts that answer the server's questions share (elicit.mjs,
// askreach.mjs): a server started with a ceiling file, a client whose
// elicitation handler answers as told, and cases reported one JSON line each.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const env = process.env;
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
  const transport = new StdioClientTransport({
    command: env.AUTOBOX_BIN, args: ["serve", "--policy", policy, ...extraArgs], env: serverEnv, stderr: "inherit",
  });
  const capabilities = answer ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: "autobox-asking", version: "1" }, { capabilities });
  const questions = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      questions.push(req.params);
      return answer(req);
    });
  }
  await client.connect(transport);
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

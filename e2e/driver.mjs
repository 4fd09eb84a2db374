// driver.mjs drives one MCP server over stdio with the official TypeScript
// SDK client and prints what happened as one JSON document on stdout, so
// that e2e_test.go can compare a session made directly with the same
// session made through `aegis run`.
//
//	node driver.mjs everything -- COMMAND [ARG...]
//	node driver.mjs cancel -- COMMAND [ARG...]
//	node driver.mjs calls PLAN.json -- COMMAND [ARG...]
//
// The command is the server itself or `aegis run ... -- node SERVER`; it
// inherits this process's environment. An http(s) URL in its place is a
// Streamable HTTP endpoint (`aegis serve`), called with the bearer token
// AEGIS_E2E_BEARER when it is set. The transcript holds every step's
// result or error, and every JSON-RPC message the client received and sent,
// in order. Nothing in it is normalised here: the Go test does that,
// explicitly, so both sides of a comparison go through the same code.
//
// A step that fails is recorded, not thrown: an error is part of the
// transcript. The driver exits non-zero only when it cannot run at all.

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  EmptyResultSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// stepTimeout bounds every request, so a message lost in the relay fails the
// step instead of hanging the test.
const stepTimeout = 20000;

// Recorder wraps a transport and keeps every message in both directions.
class Recorder {
  constructor(inner) {
    this.inner = inner;
    this.received = [];
    this.sent = [];
    this.waiters = [];
  }
  async start() {
    this.inner.onmessage = (msg, extra) => {
      this.received.push(msg);
      this.waiters = this.waiters.filter((w) => !w.check());
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
  // waitFor resolves when a message received at or after index from
  // satisfies pred.
  waitFor(label, from, pred) {
    return new Promise((resolve, reject) => {
      const w = {
        check: () => {
          const i = this.received.findIndex((m, j) => j >= from && pred(m));
          if (i < 0) return false;
          clearTimeout(w.timer);
          resolve(this.received[i]);
          return true;
        },
      };
      if (w.check()) return;
      w.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((x) => x !== w);
        reject(new Error(`timed out waiting for ${label}`));
      }, stepTimeout);
      this.waiters.push(w);
    });
  }
}

// debug writes to stderr when E2E_DEBUG is set.
function debug(msg) {
  if (process.env.E2E_DEBUG) console.error(`driver: ${msg}`);
}

function errorValue(err) {
  const v = { name: err?.name ?? "Error", message: String(err?.message ?? err) };
  if (err?.code !== undefined) v.code = err.code;
  if (err?.data !== undefined) v.data = err.data;
  return v;
}

class Session {
  constructor(client, rec) {
    this.client = client;
    this.rec = rec;
    this.steps = [];
    this.tools = new Set();
  }
  // step runs fn and records its result or error under name.
  async step(name, fn) {
    const t0 = Date.now();
    try {
      this.steps.push({ step: name, result: await fn() });
    } catch (err) {
      this.steps.push({ step: name, error: errorValue(err) });
    }
    debug(`${name}: ${Date.now() - t0} ms`);
  }
  // call calls a tool that tools/list must have shown; a tool the server
  // did not list is recorded as missing, which the Go test refuses.
  async call(name, args, options = {}) {
    if (!this.tools.has(name)) {
      this.steps.push({ step: `call ${name}`, missing: true });
      return;
    }
    await this.step(`call ${name}`, () =>
      this.client.callTool({ name, arguments: args }, undefined, { timeout: stepTimeout, ...options }),
    );
  }
}

// samplingAnswer and elicitation answers are what a person and a model would
// say; the server echoes them back in its tool results, which shows that
// the client's answers reached it unchanged.
const samplingAnswer = {
  role: "assistant",
  content: { type: "text", text: "Hello from the e2e client's pretend model." },
  model: "e2e-model",
  stopReason: "endTurn",
};

const elicitationAnswer = {
  action: "accept",
  content: {
    name: "Ada Lovelace",
    check: true,
    email: "ada@example.com",
    homepage: "https://example.com/ada",
    birthdate: "1815-12-10",
    integer: 7,
    number: 2.5,
    untitledSingleSelectEnum: "Joey",
    untitledMultipleSelectEnum: ["Piano", "Drums"],
  },
};

async function everything(client, rec) {
  const s = new Session(client, rec);
  // What the client's handlers were asked, in order.
  const asked = [];
  let roots = [{ uri: "file:///e2e/root-one", name: "first root" }];
  client.setRequestHandler(ListRootsRequestSchema, async (req) => {
    asked.push({ method: req.method, params: req.params ?? null });
    return { roots };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    asked.push({ method: req.method, params: req.params });
    return samplingAnswer;
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push({ method: req.method, params: req.params });
    return elicitationAnswer;
  });

  await s.step("initialize", async () => {
    await client.connect(rec, { timeout: stepTimeout });
    return {
      serverCapabilities: client.getServerCapabilities(),
      serverVersion: client.getServerVersion(),
      instructions: client.getInstructions(),
    };
  });
  // 350 ms after initialisation the server asks for the roots and logs how
  // many it got. Waiting for that keeps the order of what the server sends
  // independent of timing.
  await s.step("roots synced", async () =>
    (await rec.waitFor("the roots log", 0, (m) => m.method === "notifications/message" && /^Roots updated/.test(m.params?.data))).params,
  );
  await s.step("ping", () => client.ping({ timeout: stepTimeout }));

  await s.step("tools/list", async () => {
    const r = await client.listTools({}, { timeout: stepTimeout });
    for (const t of r.tools) s.tools.add(t.name);
    return r;
  });

  // Tools that answer from what they are given.
  await s.call("echo", { message: "hello through aegis ✓ \u2028 \"quoted\"" });
  await s.call("get-sum", { a: 2.5, b: -7 });
  await s.call("get-tiny-image", {});
  await s.call("get-annotated-message", { messageType: "error", includeImage: true });
  await s.call("get-annotated-message", { messageType: "success" });
  await s.call("get-structured-content", { location: "Chicago" });
  await s.call("get-resource-links", { count: 4 });
  await s.call("get-resource-reference", { resourceType: "Blob", resourceId: 3 });
  // gzip-file-as-resource fetches its input: give it a data: URI, never a
  // network URL.
  const data = "data:text/plain;base64," + Buffer.from("compress me, aegis\n".repeat(20)).toString("base64");
  await s.call("gzip-file-as-resource", { name: "e2e.txt.gz", data, outputType: "resource" });
  await s.call("gzip-file-as-resource", { name: "e2e-link.txt.gz", data, outputType: "resourceLink" });
  // Tool errors: the server's own, not aegis's.
  await s.call("echo", {});
  await s.call("get-structured-content", { location: "Atlantis" });
  await s.step("call an unknown tool", () =>
    client.callTool({ name: "no-such-tool", arguments: {} }, undefined, { timeout: stepTimeout }),
  );

  // Progress notifications, tied to the call by its token. They are
  // recorded from the wire, not from onprogress: the SDK client runs
  // notification handlers a microtask late but settles a response at once,
  // so a last progress notification that arrives in the same read as the
  // response is dropped (with an "unknown token" error), depending on how
  // the bytes were split into reads.
  if (!s.tools.has("trigger-long-running-operation")) {
    s.steps.push({ step: "call trigger-long-running-operation with progress", missing: true });
  } else {
    await s.step("call trigger-long-running-operation with progress", async () => {
      const from = rec.received.length;
      const result = await client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 0.5, steps: 5 } },
        undefined,
        { timeout: stepTimeout, onprogress: () => {} },
      );
      const progress = rec.received.slice(from).filter((m) => m.method === "notifications/progress").map((m) => m.params);
      return { result, progress };
    });
  }

  // Logging: below the level nothing comes; at the level the message does.
  await s.step("logging/setLevel warning", () => client.setLoggingLevel("warning", { timeout: stepTimeout }));
  await s.step("resources/subscribe (log suppressed)", () =>
    client.subscribeResource({ uri: "demo://resource/dynamic/text/1" }, { timeout: stepTimeout }),
  );
  await s.step("logging/setLevel debug", () => client.setLoggingLevel("debug", { timeout: stepTimeout }));
  await s.step("resources/subscribe (logged)", () =>
    client.subscribeResource({ uri: "demo://resource/dynamic/text/2" }, { timeout: stepTimeout }),
  );
  // Subscriptions: the server sends resources/updated for each subscribed
  // URI when updates are switched on.
  await s.call("toggle-subscriber-updates", {});
  await s.call("toggle-subscriber-updates", {});
  await s.step("resources/unsubscribe", async () => {
    await client.unsubscribeResource({ uri: "demo://resource/dynamic/text/1" }, { timeout: stepTimeout });
    return client.unsubscribeResource({ uri: "demo://resource/dynamic/text/2" }, { timeout: stepTimeout });
  });

  // Resources.
  let listed = [];
  await s.step("resources/list", async () => {
    const r = await client.listResources({}, { timeout: stepTimeout });
    listed = r.resources;
    return r;
  });
  await s.step("resources/templates/list", () => client.listResourceTemplates({}, { timeout: stepTimeout }));
  for (const r of listed) {
    await s.step(`resources/read ${r.uri}`, () => client.readResource({ uri: r.uri }, { timeout: stepTimeout }));
  }
  await s.step("resources/read dynamic text", () =>
    client.readResource({ uri: "demo://resource/dynamic/text/5" }, { timeout: stepTimeout }),
  );
  await s.step("resources/read dynamic blob", () =>
    client.readResource({ uri: "demo://resource/dynamic/blob/6" }, { timeout: stepTimeout }),
  );
  await s.step("resources/read unknown", () =>
    client.readResource({ uri: "demo://resource/dynamic/text/0" }, { timeout: stepTimeout }),
  );

  // Prompts.
  await s.step("prompts/list", () => client.listPrompts({}, { timeout: stepTimeout }));
  await s.step("prompts/get simple-prompt", () => client.getPrompt({ name: "simple-prompt" }, { timeout: stepTimeout }));
  await s.step("prompts/get args-prompt", () =>
    client.getPrompt({ name: "args-prompt", arguments: { city: "Zürich", state: "ZH" } }, { timeout: stepTimeout }),
  );
  await s.step("prompts/get completable-prompt", () =>
    client.getPrompt({ name: "completable-prompt", arguments: { department: "Sales", name: "Eve" } }, { timeout: stepTimeout }),
  );
  await s.step("prompts/get resource-prompt", () =>
    client.getPrompt({ name: "resource-prompt", arguments: { resourceType: "Blob", resourceId: "4" } }, { timeout: stepTimeout }),
  );
  await s.step("prompts/get resource-prompt invalid", () =>
    client.getPrompt({ name: "resource-prompt", arguments: { resourceType: "Video", resourceId: "4" } }, { timeout: stepTimeout }),
  );

  // Completion.
  await s.step("completion/complete prompt argument", () =>
    client.complete(
      { ref: { type: "ref/prompt", name: "completable-prompt" }, argument: { name: "department", value: "S" } },
      { timeout: stepTimeout },
    ),
  );
  await s.step("completion/complete with context", () =>
    client.complete(
      {
        ref: { type: "ref/prompt", name: "completable-prompt" },
        argument: { name: "name", value: "" },
        context: { arguments: { department: "Engineering" } },
      },
      { timeout: stepTimeout },
    ),
  );
  await s.step("completion/complete resource template", () =>
    client.complete(
      { ref: { type: "ref/resource", uri: "demo://resource/dynamic/text/{resourceId}" }, argument: { name: "resourceId", value: "42" } },
      { timeout: stepTimeout },
    ),
  );

  // Requests from the server to the client, answered by the client.
  await s.call("trigger-sampling-request", { prompt: "Say hello to aegis.", maxTokens: 64 });
  await s.call("trigger-elicitation-request", {});
  await s.call("trigger-url-elicitation", {
    url: "https://example.com/e2e/consent",
    message: "Open this to consent.",
    elicitationId: "e2e-elicitation-1",
  });
  // The URL elicitation error path: a JSON-RPC error with code -32042 and data.
  await s.call("trigger-url-elicitation", {
    url: "https://example.com/e2e/authorize",
    elicitationId: "e2e-elicitation-2",
    errorPath: true,
  });

  // Roots: the client changes them and says so; the server asks again.
  await s.call("get-roots-list", {});
  await s.step("roots/list_changed", async () => {
    const from = rec.received.length;
    roots = [
      { uri: "file:///e2e/root-one", name: "first root" },
      { uri: "file:///e2e/root-two" },
    ];
    await client.sendRootsListChanged();
    return (await rec.waitFor("the second roots log", from, (m) => m.method === "notifications/message" && /^Roots updated/.test(m.params?.data))).params;
  });
  await s.call("get-roots-list", {});

  // Methods and fields the client SDK does not model.
  await s.step("an unknown method", () =>
    client.request({ method: "e2e/no-such-method", params: { x: 1 } }, EmptyResultSchema, { timeout: stepTimeout }),
  );
  await s.step("ping with unknown fields", () =>
    client.request(
      { method: "ping", params: { _meta: { "example.com/e2e": { nested: [1, "two", null, { "3": true }] } }, extra: "field" } },
      EmptyResultSchema,
      { timeout: stepTimeout },
    ),
  );
  await s.step("notification of an unknown method", async () => {
    await client.notification({ method: "notifications/e2e-unknown", params: { y: [true] } });
    return client.ping({ timeout: stepTimeout });
  });

  return { steps: s.steps, asked };
}

// cancel: the client gives up on a call the server is already running. The
// server drops its answer, so the client must never receive one, not even
// when the session ends.
async function cancel(client, rec) {
  const s = new Session(client, rec);
  await s.step("initialize", () => client.connect(rec, { timeout: stepTimeout }));
  await s.step("cancel a running call", async () => {
    const ac = new AbortController();
    const from = rec.received.length;
    const p = client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 0.6, steps: 2 } },
      undefined,
      { timeout: stepTimeout, signal: ac.signal, onprogress: () => {} },
    );
    p.catch(() => {});
    // The first progress notification shows that the server has the call.
    await rec.waitFor("the first progress notification", from, (m) => m.method === "notifications/progress");
    ac.abort("e2e: the user pressed stop");
    let outcome;
    try {
      outcome = { result: await p };
    } catch (err) {
      outcome = { cancelled: errorValue(err) };
    }
    // Let the server run the call out and drop its answer.
    await new Promise((r) => setTimeout(r, 700));
    return outcome;
  });
  await s.step("ping", () => client.ping({ timeout: stepTimeout }));
  return { steps: s.steps };
}

// requests are the client's methods other than tools/call a plan may send:
// { name, method, params } instead of { name, tool, arguments }.
const requests = {
  "resources/read": (client, params) => client.readResource(params, { timeout: stepTimeout }),
  "prompts/get": (client, params) => client.getPrompt(params, { timeout: stepTimeout }),
  "completion/complete": (client, params) => client.complete(params, { timeout: stepTimeout }),
};

async function calls(client, rec, plan) {
  const s = new Session(client, rec);
  await s.step("initialize", async () => {
    await client.connect(rec, { timeout: stepTimeout });
    return { serverVersion: client.getServerVersion() };
  });
  await s.step("tools/list", async () => {
    const r = await client.listTools({}, { timeout: stepTimeout });
    for (const t of r.tools) s.tools.add(t.name);
    return r.tools.map((t) => t.name);
  });
  for (const c of plan.calls) {
    if (c.method) {
      await s.step(c.name, () => requests[c.method](client, c.params));
      continue;
    }
    await s.step(c.name, () =>
      client.callTool({ name: c.tool, arguments: c.arguments }, undefined, { timeout: stepTimeout }),
    );
  }
  return { steps: s.steps };
}

async function main() {
  const argv = process.argv.slice(2);
  const dash = argv.indexOf("--");
  if (dash < 1 || dash === argv.length - 1) {
    console.error("usage: node driver.mjs everything|cancel|calls [PLAN] -- COMMAND [ARG...]");
    process.exit(2);
  }
  const started = Date.now();
  const [scenario, ...rest] = argv.slice(0, dash);
  const [command, ...args] = argv.slice(dash + 1);
  // An http(s) URL in place of a command is a Streamable HTTP endpoint
  // (aegis serve), called with AEGIS_E2E_BEARER as a bearer token if set.
  const transport = /^https?:\/\//.test(command)
    ? new StreamableHTTPClientTransport(new URL(command), {
        requestInit: process.env.AEGIS_E2E_BEARER ? { headers: { Authorization: `Bearer ${process.env.AEGIS_E2E_BEARER}` } } : {},
      })
    : new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  const rec = new Recorder(transport);

  let out;
  switch (scenario) {
    case "everything": {
      const client = new Client(
        { name: "aegis-e2e-driver", version: "1.0.0" },
        { capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } } },
      );
      out = await everything(client, rec);
      await client.close();
      break;
    }
    case "cancel": {
      const client = new Client({ name: "aegis-e2e-driver", version: "1.0.0" }, { capabilities: {} });
      out = await cancel(client, rec);
      const t0 = Date.now();
      await client.close();
      debug(`close: ${Date.now() - t0} ms`);
      break;
    }
    case "calls": {
      // No roots capability unless the plan says: the filesystem server
      // would replace its allowed directories with the client's roots. A
      // plan may give the client sampling, answered as samplingAnswer.
      const plan = JSON.parse(readFileSync(rest[0], "utf8"));
      const client = new Client({ name: "aegis-e2e-driver", version: "1.0.0" }, { capabilities: plan.capabilities ?? {} });
      if (plan.capabilities?.sampling) {
        client.setRequestHandler(CreateMessageRequestSchema, async () => samplingAnswer);
      }
      if (plan.capabilities?.elicitation) {
        // The person at the client: the first of plan.elicit whose match
        // is in the question's message gives the answer; else decline.
        client.setRequestHandler(ElicitRequestSchema, async (req) => {
          const rule = (plan.elicit ?? []).find((e) => String(req.params.message).includes(e.match));
          return rule ? rule.answer : { action: "decline" };
        });
      }
      out = await calls(client, rec, plan);
      await client.close();
      break;
    }
    default:
      console.error(`driver: unknown scenario ${scenario}`);
      process.exit(2);
  }
  debug(`done: ${Date.now() - started} ms`);
  process.stdout.write(JSON.stringify({ scenario, ...out, received: rec.received, sent: rec.sent }, null, 1) + "\n");
}

main().catch((err) => {
  console.error("driver:", err?.stack ?? err);
  process.exit(1);
});

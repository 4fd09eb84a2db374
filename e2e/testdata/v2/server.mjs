// server.mjs is a small MCP server built with the official TypeScript SDK
// v2 (@modelcontextprotocol/server 2.x), for the end-to-end tests of both
// protocol eras (TestV2*). It speaks 2026-07-28 to a client that asks for
// it, and 2025-era revisions to one that initializes.
//
//	node server.mjs
//
// Tools:
//
//   - secret {}: answers the fake key of AEGIS_E2E_V2_KEY.
//   - echo {text}: answers "echo: TEXT", and says so if the call was a
//     retry (it had a requestState or inputResponses).
//   - wipe {}: answers "wiped"; the tests deny it.
//   - deploy {env}: needs a person's confirmation. In 2026-07-28 it
//     answers an input_required result asking, with inputRequests, for an
//     elicitation, and an opaque requestState the retry must echo byte for
//     byte; the state holds the fake AWS key of AEGIS_E2E_V2_KEY (the
//     test makes one up), so a DLP that rewrote it would break the retry. In 2025-era revisions the
//     SDK's legacy shim sends a real elicitation/create request instead.
//     The final answer quotes the person's reason and says whether the
//     state came back intact.
//   - drifting {x}: its input schema changes when AEGIS_E2E_V2_DRIFT is
//     set, so a pinned definition no longer matches (a held tool).
//
// A resource note://readme, and resource templates note://{name} and
// https://{host}/{path} (a web page, made up: nothing is fetched); a
// prompt greet {name}.
import { McpServer, ResourceTemplate, acceptedContent, inputRequired } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { z } from "zod";

// state is the requestState deploy hands out for env: opaque to the
// client, checked on the retry.
const key = process.env.AEGIS_E2E_V2_KEY ?? "no-key";
const stateFor = (env) => `v1:${key}:deploy:${env}`;

// build returns a server with every tool, resource and prompt: serveStdio
// makes one per connection, of the era the client's first message selects.
function build() {
const server = new McpServer({ name: "aegis-e2e-v2", version: "1.0.0" });

// echo says so when the call it got was a retry (a requestState or
// answers): a round of aegis's own must never reach it.
server.registerTool("echo", { description: "Echoes text.", inputSchema: z.object({ text: z.string() }) }, async ({ text }, ctx) => {
  const state = ctx.mcpReq?.requestState?.();
  const inputs = ctx.mcpReq?.inputResponses;
  const retry = state !== undefined || (inputs && Object.keys(inputs).length > 0) ? ` (the server saw a retry: ${JSON.stringify({ state, inputs })})` : "";
  return { content: [{ type: "text", text: `echo: ${text}${retry}` }] };
});

server.registerTool("secret", { description: "Answers a fake key.", inputSchema: z.object({}) }, async () => ({
  content: [{ type: "text", text: `the key is ${key}` }],
}));

server.registerTool("wipe", { description: "Wipes everything.", inputSchema: z.object({}) }, async () => ({
  content: [{ type: "text", text: "wiped" }],
}));

const confirmation = z.object({ reason: z.string() });

server.registerTool(
  "deploy",
  { description: "Deploys to env once a person confirms.", inputSchema: z.object({ env: z.string() }) },
  async ({ env }, ctx) => {
    const answer = acceptedContent(ctx.mcpReq.inputResponses, "confirm", confirmation);
    if (answer === undefined) {
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: `Deploy to ${env}? Say why.`, requestedSchema: confirmation }),
        },
        requestState: stateFor(env),
      });
    }
    // In 2025-era revisions the legacy shim re-enters the handler with the
    // answer and no requestState.
    const state = ctx.mcpReq.requestState?.();
    const intact = state === undefined ? "none" : state === stateFor(env) ? "intact" : "CHANGED";
    return { content: [{ type: "text", text: `deployed to ${env}; reason: ${answer.reason}; state: ${intact}` }] };
  },
);

const drift = process.env.AEGIS_E2E_V2_DRIFT !== undefined;
server.registerTool(
  "drifting",
  { description: "A tool whose schema drifts.", inputSchema: drift ? z.object({ x: z.string(), path: z.string() }) : z.object({ x: z.string() }) },
  async ({ x }) => ({ content: [{ type: "text", text: `drifting: ${x}` }] }),
);

server.registerResource("readme", "note://readme", { mimeType: "text/plain" }, async (uri) => ({
  contents: [{ uri: uri.href, text: "the readme note" }],
}));
server.registerResource("note", new ResourceTemplate("note://{name}", { list: undefined }), { mimeType: "text/plain" }, async (uri, { name }) => ({
  contents: [{ uri: uri.href, text: `the note ${name}` }],
}));

server.registerResource("page", new ResourceTemplate("https://{host}/{path}", { list: undefined }), { mimeType: "text/plain" }, async (uri) => ({
  contents: [{ uri: uri.href, text: `the page ${uri.href}` }],
}));

server.registerPrompt("greet", { description: "Greets.", argsSchema: z.object({ name: z.string() }) }, ({ name }) => ({
  messages: [{ role: "user", content: { type: "text", text: `Hello, ${name}.` } }],
}));

return server;
}

serveStdio(build);

// server.mjs is an MCP server with the fixtures the server scenarios of
// the MCP conformance suite (@modelcontextprotocol/conformance) call, for
// TestConformanceThroughServe. The suite's own test server is an example
// in its repository, not on npm; this one is written here from the
// requirements each scenario states (`conformance list --server`, and
// the scenarios' descriptions), with the official TypeScript SDK v1.
//
//	node server.mjs        # one session over stdio, as aegis serve runs it
//	node server.mjs http   # over Streamable HTTP on a free loopback port,
//	                       # printing its URL as stdout's first line
//
// Both are the same server, one instance per MCP session: the test runs
// the suite against it bare over HTTP, and behind aegis serve over stdio.
//
// Tools: test_simple_text, test_image_content, test_audio_content,
// test_embedded_resource, test_multiple_content_types,
// test_tool_with_logging, test_tool_with_progress, test_error_handling,
// test_sampling {prompt}, test_elicitation {message},
// test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums,
// json_schema_2020_12_tool, test_reconnection. Resources
// test://static-text, test://static-binary, test://watched-resource and
// the template test://template/{id}/data. Prompts test_simple_prompt,
// test_prompt_with_arguments {arg1, arg2},
// test_prompt_with_embedded_resource {resourceUri}, test_prompt_with_image.
// Completion of any argument, and subscriptions.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// A 1x1 PNG, and a WAV file of one silent sample.
const png =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const wav = Buffer.from([
  0x52, 0x49, 0x46, 0x46, 0x26, 0, 0, 0, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6d, 0x74, 0x20, 16, 0, 0, 0, 1, 0, 1, 0,
  0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0, 0x64, 0x61, 0x74, 0x61, 2, 0, 0, 0, 0, 0,
]).toString("base64");

const noArgs = { type: "object", properties: {} };

const tools = [
  { name: "test_simple_text", description: "Returns simple text", inputSchema: noArgs },
  { name: "test_image_content", description: "Returns an image", inputSchema: noArgs },
  { name: "test_audio_content", description: "Returns audio", inputSchema: noArgs },
  { name: "test_embedded_resource", description: "Returns an embedded resource", inputSchema: noArgs },
  { name: "test_multiple_content_types", description: "Returns text, an image and a resource", inputSchema: noArgs },
  { name: "test_tool_with_logging", description: "Logs three messages while it runs", inputSchema: noArgs },
  { name: "test_tool_with_progress", description: "Reports progress while it runs", inputSchema: noArgs },
  { name: "test_error_handling", description: "Always fails", inputSchema: noArgs },
  {
    name: "test_sampling",
    description: "Asks the client's model",
    inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] },
  },
  {
    name: "test_elicitation",
    description: "Asks the user",
    inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  },
  { name: "test_elicitation_sep1034_defaults", description: "Asks the user, with defaults", inputSchema: noArgs },
  { name: "test_elicitation_sep1330_enums", description: "Asks the user to choose", inputSchema: noArgs },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: { type: "object", properties: { street: { type: "string" }, city: { type: "string" } } },
      },
      properties: { name: { type: "string" }, address: { $ref: "#/$defs/address" } },
      additionalProperties: false,
    },
  },
  { name: "test_reconnection", description: "Answers at once (this server never closes a stream)", inputSchema: noArgs },
];

const text = (t) => ({ content: [{ type: "text", text: t }] });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function elicit(extra, message, properties, required = []) {
  return extra.sendRequest(
    { method: "elicitation/create", params: { message, requestedSchema: { type: "object", properties, required } } },
    ElicitResultSchema,
  );
}

async function callTool(req, extra) {
  const args = req.params.arguments ?? {};
  switch (req.params.name) {
    case "test_simple_text":
    case "json_schema_2020_12_tool":
    case "test_reconnection":
      return text("This is a simple text response for testing.");
    case "test_image_content":
      return { content: [{ type: "image", data: png, mimeType: "image/png" }] };
    case "test_audio_content":
      return { content: [{ type: "audio", data: wav, mimeType: "audio/wav" }] };
    case "test_embedded_resource":
      return {
        content: [
          {
            type: "resource",
            resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." },
          },
        ],
      };
    case "test_multiple_content_types":
      return {
        content: [
          { type: "text", text: "Multiple content types test:" },
          { type: "image", data: png, mimeType: "image/png" },
          {
            type: "resource",
            resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: '{"test":"data","value":123}' },
          },
        ],
      };
    case "test_tool_with_logging": {
      for (const [i, data] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
        if (i > 0) await sleep(50);
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data } });
      }
      return text("Tool with logging executed successfully");
    }
    case "test_tool_with_progress": {
      const token = extra._meta?.progressToken;
      for (const [i, progress] of [0, 50, 100].entries()) {
        if (i > 0) await sleep(50);
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total: 100 } });
        }
      }
      return text("Tool with progress executed successfully");
    }
    case "test_error_handling":
      return { isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] };
    case "test_sampling": {
      const r = await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: { messages: [{ role: "user", content: { type: "text", text: String(args.prompt) } }], maxTokens: 100 },
        },
        CreateMessageResultSchema,
      );
      return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
    }
    case "test_elicitation": {
      const r = await elicit(
        extra,
        String(args.message),
        { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } },
        ["username", "email"],
      );
      return text(`User response: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case "test_elicitation_sep1034_defaults": {
      const r = await elicit(extra, "Please review and update the form fields with defaults", {
        name: { type: "string", description: "User name", default: "John Doe" },
        age: { type: "integer", description: "User age", default: 30 },
        score: { type: "number", description: "User score", default: 95.5 },
        status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
        verified: { type: "boolean", description: "Verification status", default: true },
      });
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
    case "test_elicitation_sep1330_enums": {
      const r = await elicit(extra, "Please choose", {
        untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
        titledSingle: {
          type: "string",
          oneOf: [
            { const: "value1", title: "First Option" },
            { const: "value2", title: "Second Option" },
            { const: "value3", title: "Third Option" },
          ],
        },
        legacyEnum: { type: "string", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
        untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
        titledMulti: {
          type: "array",
          items: {
            anyOf: [
              { const: "value1", title: "First Choice" },
              { const: "value2", title: "Second Choice" },
              { const: "value3", title: "Third Choice" },
            ],
          },
        },
      });
      return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
    }
  }
  throw new McpError(ErrorCode.InvalidParams, `unknown tool ${req.params.name}`);
}

const resources = [
  { uri: "test://static-text", name: "static-text", description: "A text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A binary resource", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to", mimeType: "text/plain" },
];

function readResource(uri) {
  switch (uri) {
    case "test://static-text":
      return { uri, mimeType: "text/plain", text: "This is the content of the static text resource." };
    case "test://static-binary":
      return { uri, mimeType: "image/png", blob: png };
    case "test://watched-resource":
      return { uri, mimeType: "text/plain", text: "Watched resource content." };
  }
  const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
  if (m) {
    return { uri, mimeType: "application/json", text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) };
  }
  throw new McpError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
}

const prompts = [
  { name: "test_simple_prompt", description: "A prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt with an embedded resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
];

function getPrompt(name, args = {}) {
  const user = (content) => ({ role: "user", content });
  switch (name) {
    case "test_simple_prompt":
      return { messages: [user({ type: "text", text: "This is a simple prompt for testing." })] };
    case "test_prompt_with_arguments":
      return { messages: [user({ type: "text", text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` })] };
    case "test_prompt_with_embedded_resource":
      return {
        messages: [
          user({ type: "resource", resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } }),
          user({ type: "text", text: "Please process the embedded resource above." }),
        ],
      };
    case "test_prompt_with_image":
      return {
        messages: [user({ type: "image", data: png, mimeType: "image/png" }), user({ type: "text", text: "Please analyze the image above." })],
      };
  }
  throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${name}`);
}

function newServer() {
  const s = new Server(
    { name: "aegis-e2e-conformance", version: "1.0.0" },
    { capabilities: { tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {} } },
  );
  s.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  s.setRequestHandler(CallToolRequestSchema, callTool);
  s.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources }));
  s.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      { uriTemplate: "test://template/{id}/data", name: "template", description: "A resource template", mimeType: "application/json" },
    ],
  }));
  s.setRequestHandler(ReadResourceRequestSchema, async (req) => ({ contents: [readResource(req.params.uri)] }));
  s.setRequestHandler(SubscribeRequestSchema, async () => ({}));
  s.setRequestHandler(UnsubscribeRequestSchema, async () => ({}));
  s.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts }));
  s.setRequestHandler(GetPromptRequestSchema, async (req) => getPrompt(req.params.name, req.params.arguments));
  s.setRequestHandler(CompleteRequestSchema, async (req) => {
    const v = req.params.argument.value;
    const values = ["paris", "park", "party"].filter((x) => x.startsWith(v));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  return s;
}

if (process.argv[2] === "http") {
  serveHTTP();
} else {
  await newServer().connect(new StdioServerTransport());
}

// serveHTTP serves over Streamable HTTP on a free loopback port, one
// server per MCP session, with the SDK transport's DNS rebinding
// protection on (only this listener's Host names), as a server on
// loopback should have it; and prints its URL.
function serveHTTP() {
  const sessions = new Map();
  let allowedHosts;
  const srv = http.createServer(async (req, res) => {
    try {
      const id = req.headers["mcp-session-id"];
      let transport = id && sessions.get(id);
      if (!transport) {
        if (id || req.method !== "POST") {
          res.writeHead(id ? 404 : 400, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no such session" }, id: null }));
          return;
        }
        // A new session: the transport reads the body, and answers
        // anything but initialize with an error itself.
        const t = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => sessions.set(sid, t),
          enableDnsRebindingProtection: true,
          allowedHosts,
        });
        t.onclose = () => sessions.delete(t.sessionId);
        await newServer().connect(t);
        transport = t;
      }
      await transport.handleRequest(req, res);
    } catch (err) {
      console.error("server.mjs:", err);
      if (!res.headersSent) {
        res.writeHead(500, { "Content-Type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: String(err) }, id: null }));
      }
    }
  });
  srv.listen(0, "127.0.0.1", () => {
    const port = srv.address().port;
    allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`];
    console.log(`http://127.0.0.1:${port}/mcp`);
  });
}

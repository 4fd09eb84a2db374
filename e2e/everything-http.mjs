// everything-http.mjs serves @modelcontextprotocol/server-everything over
// MCP Streamable HTTP on a free loopback port, one server instance per
// MCP session, and prints its URL (http://127.0.0.1:PORT/mcp) as the
// first line of stdout:
//
//	node everything-http.mjs
//
// It is the bare side of the conformance test (conformance_test.go): the
// same server factory the package's own stdio entry point uses (which
// `aegis serve` runs as its upstream), behind the TypeScript SDK's
// Streamable HTTP server transport, as the package's own streamableHttp
// entry point does; but that one listens on every interface at a fixed
// port, and this test stays on loopback.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createServer } from "@modelcontextprotocol/server-everything/dist/server/index.js";

const sessions = new Map();

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
      const { server, cleanup } = createServer();
      const t = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, t),
      });
      t.onclose = () => {
        if (t.sessionId) {
          sessions.delete(t.sessionId);
          cleanup(t.sessionId);
        }
      };
      await server.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res);
  } catch (err) {
    console.error("everything-http:", err);
    if (!res.headersSent) {
      res.writeHead(500, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: String(err) }, id: null }));
    }
  }
});

srv.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${srv.address().port}/mcp`);
});

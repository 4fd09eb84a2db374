// apiclient.mjs is a stand-in for a server that calls an HTTPS API through
// the proxy its environment names, as proxy-aware clients do: its tool get
// opens a CONNECT tunnel through HTTPS_PROXY and speaks TLS over it with
// node's https, trusting what node trusts (NODE_EXTRA_CA_CERTS included),
// and sends an Authorization of its own. Its tool env says whether its
// environment holds a value.
import http from "node:http";
import { isIP } from "node:net";
import https from "node:https";
import tls from "node:tls";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const proxy = new URL(process.env.HTTPS_PROXY);

function get(url) {
  const u = new URL(url);
  const port = u.port || "443";
  return new Promise((resolve) => {
    const connect = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: `${u.hostname}:${port}` });
    connect.on("connect", (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve(`CONNECT ${res.statusCode}`);
        return;
      }
      const req = https.get(
        {
          host: u.hostname,
          port,
          path: u.pathname + u.search,
          headers: { authorization: "Bearer the-server-s-own" },
          createConnection: () => tls.connect({ socket, servername: isIP(u.hostname) ? undefined : u.hostname }),
        },
        (res) => {
          let body = "";
          res.on("data", (d) => (body += d));
          res.on("end", () => {
            socket.destroy();
            resolve(`${res.statusCode} ${body}`);
          });
        },
      );
      req.on("error", (err) => resolve(`error ${err.code || err.message}`));
    });
    connect.on("error", (err) => resolve(`error ${err.code}`));
    connect.end();
  });
}

const server = new McpServer({ name: "apiclient", version: "1.0.0" });
server.tool("get", "GETs an https URL through the proxy.", { url: z.string() }, async ({ url }) => ({
  content: [{ type: "text", text: await get(url) }],
}));
server.tool("env", "Says whether the environment holds a value.", { value: z.string() }, async ({ value }) => {
  const names = Object.entries(process.env)
    .filter(([, v]) => v.includes(value))
    .map(([k]) => k);
  return { content: [{ type: "text", text: names.length ? `held in ${names.join(",")}` : "not held" }] };
});
await server.connect(new StdioServerTransport());

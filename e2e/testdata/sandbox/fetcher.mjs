// fetcher.mjs is a stand-in for a URL-fetching server that uses the
// proxy its environment names, as proxy-aware fetchers do: its tool fetch
// GETs a URL through HTTP_PROXY (absolute-form requests) and follows
// redirects itself, each a new request through the proxy. Its tool dial
// connects to a loopback port directly, ignoring the proxy.
import http from "node:http";
import { connect } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;

function get(url) {
  return new Promise((resolve) => {
    const opts = proxy
      ? { host: proxy.hostname, port: proxy.port, path: url, headers: { host: new URL(url).host } }
      : url;
    const req = http.get(opts, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, location: res.headers.location, body }));
    });
    req.on("error", (err) => resolve({ status: 0, body: "error " + err.code }));
  });
}

const server = new McpServer({ name: "fetcher", version: "1.0.0" });
server.tool("fetch", "Fetches a URL, following redirects.", { url: z.string() }, async ({ url }) => {
  const hops = [];
  for (let i = 0; i < 3; i++) {
    const r = await get(url);
    hops.push(`${url} -> ${r.status} ${r.body.slice(0, 200)}`);
    if (r.status >= 300 && r.status < 400 && r.location) {
      url = new URL(r.location, url).href;
      continue;
    }
    break;
  }
  return { content: [{ type: "text", text: hops.join("\n") }] };
});
server.tool("dial", "Connects to a loopback port directly.", { port: z.number() }, async ({ port }) => {
  const what = await new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port });
    const timer = setTimeout(() => done("error TIMEOUT"), 3000);
    function done(w) {
      clearTimeout(timer);
      s.destroy();
      resolve(w);
    }
    s.on("connect", () => done("connected"));
    s.on("error", (err) => done("error " + err.code));
  });
  return { content: [{ type: "text", text: what }] };
});
await server.connect(new StdioServerTransport());

/**
 * For the dashboard benchmark and the long-list test: the built dashboard (dist/web/) and just enough of the API for
 * the instances view (N instances on three nodes, one audit chain with an idle stream), plus the benchmark's baseline
 * page, a static table of the same N rows. Every answer is `no-store`, so each load fetches and parses everything.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join } from "node:path";

const TYPES: Record<string, string> = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".map": "application/json" };

export function instancesOf(count: number) {
  return Array.from({ length: count }, (_, i) => {
    const n = String(i).padStart(4, "0");
    return {
      instance_id: `inst-${n}-${"a".repeat(20)}`,
      name: `agent-${n}`,
      node_id: (i % 3).toString(16).repeat(32),
      decision_id: n.padEnd(64, "d"),
      variant: "linux-x86_64",
      route: "native",
      package_id: "p".repeat(64),
      placed_ms: 1_700_000_000_000 + i,
      adopted: false,
      pending: null,
      state: i % 10 === 0 ? "stopped" : "running",
      status: null,
    };
  });
}

/** The baseline: the same rows as a plain HTML table, no script at all. */
function baselinePage(count: number): string {
  const rows = instancesOf(count)
    .map((i) => `<tr><td>${i.name}</td><td><code>${i.instance_id}</code></td><td><code>${i.node_id.slice(0, 8)}…</code></td><td>${i.state}</td><td></td><td><button type="button">Details</button></td></tr>`)
    .join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body>
<table aria-label="instances"><thead><tr><th>name</th><th>instance</th><th>node</th><th>state</th><th>pending</th><th></th></tr></thead>
<tbody>${rows}</tbody></table></body></html>`;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
  res.end(body);
}

export async function startStub(webRoot: string, count: number): Promise<{ url: string; server: Server }> {
  const instances = JSON.stringify({ instances: instancesOf(count) });
  const nodes = JSON.stringify({ nodes: ["pi-kitchen", "pi-garage", "homelab"].map((name, i) => ({ addr: `127.0.0.1:${7000 + i}`, node_id: i.toString(16).repeat(32), name })) });
  const baseline = baselinePage(count);
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (path === "/api/v1/instances") return send(res, 200, "application/json", instances);
    if (path === "/api/v1/nodes") return send(res, 200, "application/json", nodes);
    if (path === "/api/v1/audit/chains") {
      return send(res, 200, "application/json", JSON.stringify({ chains: [{ name: "controller", chain_id: "c", owner_key: "k", role: "controller", events: 0, head: { seq: -1, hash: "" } }] }));
    }
    if (path === "/api/v1/audit/events") return send(res, 200, "application/json", JSON.stringify({ chain: "controller", events: [], head: -1 }));
    if (path === "/api/v1/audit/stream") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      res.write(": idle\n\n");
      return;
    }
    if (path.startsWith("/api/")) return send(res, 404, "application/json", JSON.stringify({ error: { code: "not_found", message: `the benchmark stub has no ${path}` } }));
    if (path === "/baseline.html") return send(res, 200, "text/html", baseline);
    const file = path === "/" ? "index.html" : path.slice(1);
    if (file.includes("..")) return send(res, 404, "text/plain", "not found");
    try {
      return send(res, 200, TYPES[extname(file)] ?? "application/octet-stream", readFileSync(join(webRoot, file)));
    } catch {
      return send(res, 404, "text/plain", "not found");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server };
}

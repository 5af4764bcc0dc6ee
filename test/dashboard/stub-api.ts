/**
 * For the dashboard benchmark and the stub browser tests: the built dashboard (dist/web/) and just enough of the API
 * for the instances view and the overview (N instances on three nodes, one audit chain with an idle stream), plus the
 * benchmark's baseline page, a static table of the same N rows. Every answer is `no-store`, so each load fetches and
 * parses everything, and carries the strict Content-Security-Policy the server sends with the dashboard (no inline
 * script or style, `frame-ancestors 'none'`), so every stub test also proves the dashboard runs under it.
 *
 * `restarted: true` plays a controller just after a restart: it knows its nodes' addresses but has described none,
 * so until someone asks `GET /nodes?refresh=true` the nodes have no name and every instance's state is "unknown"
 * (what `GET /instances` answers when it has no boot id to ask a node with).
 */
import { readFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join } from "node:path";

const TYPES: Record<string, string> = {
  ".html": "text/html",
  ".js": "text/javascript",
  ".css": "text/css",
  ".map": "application/json",
};

/** The policy the server's dashboard responses carry (helper `server`, issue 13 hardening). */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export const NODE_NAMES = ["pi-kitchen", "pi-garage", "homelab"] as const;

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
    .map(
      (i) =>
        `<tr><td>${i.name}</td><td><code>${i.instance_id}</code></td><td><code>${i.node_id.slice(0, 8)}…</code></td><td>${i.state}</td><td></td><td><button type="button">Details</button></td></tr>`,
    )
    .join("\n");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body>
<table aria-label="instances"><thead><tr><th>name</th><th>instance</th><th>node</th><th>state</th><th>pending</th><th></th></tr></thead>
<tbody>${rows}</tbody></table></body></html>`;
}

function nodesOf(described: boolean) {
  return NODE_NAMES.map((name, i) => ({
    addr: `127.0.0.1:${7000 + i}`,
    node_id: i.toString(16).repeat(32),
    key: "k".repeat(64),
    name: described ? name : null,
    tier: "paired",
    tier_source: "api",
    liveness: described ? "alive" : "unknown",
    boot_id: described ? "b".repeat(32) : null,
    learned_ms: described ? 1_700_000_000_000 : null,
    last_ok_ms: described ? Date.now() : null,
    facts_expire_at_ms: null,
    error: null,
    cordoned: false,
    cordon_reason: null,
    forgotten_ms: null,
    forget_reason: null,
    facts: described
      ? {
          name,
          os: "linux",
          arch: "aarch64",
          board: "pi5",
          cpu_count: 4,
          load1_milli: 250,
          memory_total_bytes: 8_455_716_864,
          memory_available_bytes: 6_341_787_648,
          accelerators: [],
          labels: {},
          issued_at_ms: 0,
        }
      : null,
  }));
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, {
    "content-type": type,
    "cache-control": "no-store",
    "content-security-policy": DASHBOARD_CSP,
  });
  res.end(body);
}

export interface StubOptions {
  /** A controller just restarted: nothing is described until `GET /nodes?refresh=true` (see the header). */
  readonly restarted?: boolean;
  /**
   * A mesh with everything the overview alerts on: homelab dead, agent-0001 running twice, one unsettled decision,
   * and a refused workload in the chain.
   */
  readonly troubled?: boolean;
  /**
   * Nodes the operator marked (issue 16): `MARKED.cordoned` cordoned for a disk swap, `MARKED.forgotten` forgotten,
   * and the placement that was on it listed as moved (`GET /moved`), replaced by `MARKED.successor`.
   */
  readonly marked?: boolean;
}

export const MARKED = {
  cordoned: "1".repeat(32),
  cordonReason: "disk swap on saturday",
  forgotten: "2".repeat(32),
  forgetReason: "burnt power supply",
  movedInstance: "agent-0003-old",
  successor: "s".repeat(64),
} as const;

function markedNode<T extends { node_id: string }>(n: T): T {
  if (n.node_id === MARKED.cordoned) return { ...n, cordoned: true, cordon_reason: MARKED.cordonReason };
  if (n.node_id === MARKED.forgotten)
    return {
      ...n,
      liveness: "dead",
      cordoned: true,
      cordon_reason: MARKED.forgetReason,
      forgotten_ms: Date.now() - 3_600_000,
      forget_reason: MARKED.forgetReason,
    };
  return n;
}

export const TROUBLE = {
  deadNode: "2".repeat(32),
  unsettledDecision: "u".repeat(64),
  duplicate: "agent-0001",
  refusedSeq: 1,
} as const;

function troubleEvents() {
  const event = (seq: number, kind: string, source: string, payload: Record<string, unknown>) => ({
    seq,
    chain_id: "c",
    ts: 1_700_000_000_000 + seq,
    prev_hash: "0".repeat(64),
    source,
    kind,
    payload,
    payload_hash: "p",
    hash: String(seq).repeat(64).slice(0, 64),
    sig: "s",
  });
  return [
    event(0, "chain.genesis", "chain", { role: "controller" }),
    event(TROUBLE.refusedSeq, "workload.refuse", "placement", {
      phase: "prepare",
      name: "agent-0042",
      error: "the package's signer is not trusted",
    }),
  ];
}

export async function startStub(
  webRoot: string,
  count: number,
  options: StubOptions = {},
): Promise<{ url: string; server: Server }> {
  let described = options.restarted !== true;
  const troubled = options.troubled === true;
  const marked = options.marked === true;
  const moved = marked
    ? [
        {
          instance_id: MARKED.movedInstance,
          name: "agent-0003",
          node_id: MARKED.forgotten,
          decision_id: "d".repeat(64),
          package_id: "p".repeat(64),
          authority: "forget",
          moved_ms: Date.now() - 3_500_000,
          moves: 1,
          successor: MARKED.successor,
        },
      ]
    : [];
  const base = instancesOf(count);
  const twin = base.find((i) => i.name === TROUBLE.duplicate);
  const instances =
    troubled && twin
      ? [...base, { ...twin, instance_id: `${twin.instance_id}-twin`, node_id: "0".repeat(32), state: "running" }]
      : base;
  const events = troubled ? troubleEvents() : [];
  const unsettled = troubled
    ? [
        {
          decision_id: TROUBLE.unsettledDecision,
          name: "agent-0007",
          node_id: TROUBLE.deadNode,
          variant: "linux-x86_64",
          package_id: "p".repeat(64),
          created_ms: 1_700_000_000_000,
          workload: {},
        },
      ]
    : [];
  const baseline = baselinePage(count);
  const started = Date.now();
  const server = createServer((req, res) => {
    const [path = "/", query = ""] = (req.url ?? "/").split("?");
    if (path === "/api/v1/instances") {
      // Issue 36 (the top view): a running instance's cgroup usage, its CPU counter growing at 10, 20 or 30 % of a core.
      const now = Date.now();
      const usage = (i: { state: string }, n: number) =>
        i.state === "running"
          ? {
              usage: {
                cpu_usec: Math.round((now - started) * 1000 * ((n % 3) + 1) * 0.1),
                memory_bytes: (n + 1) * 1024 * 1024,
                sampled_ms: now,
                source: "cgroup",
              },
            }
          : {};
      const answer = described
        ? instances.map((i, n) => ({ ...i, status: { agent: i.name, state: i.state, ...usage(i, n) } }))
        : instances.map((i) => ({ ...i, state: "unknown", status: null }));
      return send(res, 200, "application/json", JSON.stringify({ instances: answer }));
    }
    if (path === "/api/v1/nodes") {
      if (new URLSearchParams(query).get("refresh") === "true") described = true;
      const nodes = nodesOf(described)
        .map((n) =>
          troubled && n.node_id === TROUBLE.deadNode
            ? { ...n, liveness: "dead", error: "connect ECONNREFUSED 127.0.0.1:7002" }
            : n,
        )
        .map((n) => (marked ? markedNode(n) : n));
      return send(res, 200, "application/json", JSON.stringify({ nodes }));
    }
    if (path === "/api/v1/moved") return send(res, 200, "application/json", JSON.stringify({ moved }));
    if (path === "/api/v1/agents") return send(res, 200, "application/json", JSON.stringify({ agents: [] }));
    if (path === "/api/v1/unsettled") return send(res, 200, "application/json", JSON.stringify({ unsettled }));
    const head = events.length - 1;
    if (path === "/api/v1/audit/chains") {
      return send(
        res,
        200,
        "application/json",
        JSON.stringify({
          chains: [
            {
              name: "controller",
              chain_id: "c",
              owner_key: "k",
              role: "controller",
              events: events.length,
              head: { seq: head, hash: "" },
            },
          ],
        }),
      );
    }
    if (path === "/api/v1/audit/events") {
      const after = Number(new URLSearchParams(query).get("after") ?? -1);
      return send(
        res,
        200,
        "application/json",
        JSON.stringify({ chain: "controller", events: events.filter((e) => e.seq > after), head }),
      );
    }
    if (path === "/api/v1/audit/stream") {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
      res.write(": idle\n\n");
      return;
    }
    if (path.startsWith("/api/"))
      return send(
        res,
        404,
        "application/json",
        JSON.stringify({ error: { code: "not_found", message: `the benchmark stub has no ${path}` } }),
      );
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

/**
 * The node simulator's process (issue 35): many `SimNode`s, each on its own loopback port behind berth's own listener
 * (`listenFrames` with `listenTls`: TLS 1.3, the node's identity certificate, only authorised controller keys get past
 * the handshake) and berth's own connection loop (`mesh/node/connection.ts`: one request in flight per connection,
 * first-frame and idle deadlines). Driven by its parent over the IPC channel (client.ts).
 *
 * One port per node, not one port with SNI routing: the controller's connector sends no server name for an IP
 * address (RFC 6066 allows none), so one port would have to present one certificate before knowing which node was
 * meant, which needs a change on the controller's side; with a port each, the controller connects, pins and pools
 * per address exactly as it does with real nodes.
 *
 *   node dist/bench/support/node-sim/host.js      (forked by client.ts; speaks JSON messages over process.send)
 */
import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { nodeIdOf } from "../../../src/core/crypto/ed25519.js";
import { LEASE_CHECK_MS } from "../../../src/core/mesh/lease.js";
import { generateSigningKey } from "../../../src/keys/key-file.js";
import { Connections } from "../../../src/mesh/node/connection.js";
import { REQUEST_FRAME_BYTES } from "../../../src/mesh/transport/frames.js";
import { listenFrames } from "../../../src/mesh/transport/tcp.js";
import { listenTls } from "../../../src/mesh/transport/tls.js";
import { SharedContent, type SimInstance, SimNode } from "./node.js";
import type { HostReply, HostRequest, SimNodeInfo } from "./protocol.js";

interface Hosted {
  readonly node: SimNode;
  readonly connections: Connections;
  server: Server | null;
  port: number;
  /** Crashed (listener closed, state wiped) or cut (listener closed, state and lease clock kept). */
  down: "crashed" | "cut" | null;
  /** A hung machine's address: takes connections, never answers (closed on heal). */
  silence: Silence | null;
}

interface Silence {
  close(): Promise<void>;
}

/** Takes every connection on `port` and never writes to it (what a hung host or a dropping firewall looks like). */
function silentOn(port: number): Promise<Silence> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
  });
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve({ close }));
  });
}

const LIMITS = { first_frame_ms: 5_000, idle_ms: 60_000 };
const content = new SharedContent();
const hosted = new Map<string, Hosted>();
let handshakes = 0;

async function listen(h: Hosted): Promise<void> {
  const node = h.node;
  const { server, address } = await listenFrames(`127.0.0.1:${h.port}`, (stream) => void h.connections.serve(stream), {
    tls: listenTls({ identity: node.key, authorised: () => node.config.controllers }),
    // node.json's default limits (mesh/node/config.ts) as a daemon's listener takes them, but for the first-bytes
    // deadline: one process completing thousands of handshakes at once on a shared machine is far slower than one
    // node completing its own, and that deadline guards a real node against silent peers, which nothing here tests.
    limits: {
      maxConnections: 1024,
      maxUnauthenticated: 256,
      maxUnauthenticatedPerAddress: 64,
      graceMs: 250,
      firstBytesMs: 30_000,
      maxFrameBytes: REQUEST_FRAME_BYTES,
    },
  });
  server.on("connection", () => handshakes++);
  h.server = server;
  h.port = Number(address.slice(address.lastIndexOf(":") + 1));
}

async function start(req: Extract<HostRequest, { op: "start" }>): Promise<SimNodeInfo[]> {
  const made: SimNodeInfo[] = [];
  const pending: Promise<void>[] = [];
  for (let i = 0; i < req.count; i++) {
    const key = generateSigningKey();
    const nodeId = nodeIdOf(key.publicKey);
    const node = new SimNode(
      key,
      nodeId,
      randomBytes(16).toString("hex"),
      {
        name: `${req.prefix}${req.first + i}`,
        board: req.board,
        labels: req.labels,
        controllers: new Set(req.controllers),
        signers: new Set(req.signers),
        leaseMs: req.leaseMs,
      },
      content,
    );
    const h: Hosted = {
      node,
      connections: null as unknown as Connections,
      server: null,
      port: 0,
      down: null,
      silence: null,
    };
    (h as { connections: Connections }).connections = new Connections(
      () => LIMITS,
      (signed, stream) => node.handle(signed, stream),
    );
    hosted.set(nodeId, h);
    pending.push(
      listen(h).then(
        () =>
          void made.push({ node_id: nodeId, key: key.publicKey, addr: `127.0.0.1:${h.port}`, name: node.config.name }),
      ),
    );
    if (pending.length >= 256) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  return made;
}

function closeListener(h: Hosted): Promise<void> {
  const server = h.server;
  h.server = null;
  h.connections.closeAll();
  if (!server) return Promise.resolve();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function handle(req: HostRequest): Promise<unknown> {
  switch (req.op) {
    case "start":
      return start(req);
    case "hold": {
      for (const row of req.rows) {
        const h = hosted.get(row.node_id);
        if (!h) throw new Error(`no simulated node ${row.node_id}`);
        const { node_id: _n, ...instance } = row;
        h.node.hold(instance as SimInstance);
      }
      return req.rows.length;
    }
    case "crash":
    case "hang":
    case "cut": {
      for (const id of req.node_ids) {
        const h = hosted.get(id);
        if (!h || h.down) continue;
        h.down = req.op === "cut" ? "cut" : "crashed";
        await closeListener(h);
        if (req.op !== "cut") h.node.wipe();
        if (req.op === "hang") h.silence = await silentOn(h.port);
      }
      return req.node_ids.length;
    }
    case "heal": {
      for (const id of req.node_ids) {
        const h = hosted.get(id);
        if (!h?.down) continue;
        // A crashed node comes back as a fresh daemon (new boot id) on the same address; a cut one as it was.
        if (h.down === "crashed") h.node.reboot(randomBytes(16).toString("hex"));
        h.down = null;
        const silence = h.silence;
        h.silence = null;
        await silence?.close();
        await listen(h);
      }
      return req.node_ids.length;
    }
    case "census": {
      const live: Record<string, number> = {};
      let instances = 0;
      const served: Record<string, number> = {};
      for (const h of hosted.values()) {
        instances += h.node.instances.size;
        for (const [m, n] of h.node.served) served[m] = (served[m] ?? 0) + n;
        if (h.down === "crashed") continue;
        for (const name of h.node.liveNames()) live[name] = (live[name] ?? 0) + 1;
      }
      return { live, instances, served, handshakes, rss_mb: Math.round(process.memoryUsage().rss / 2 ** 20) };
    }
    case "close": {
      await Promise.all([...hosted.values()].map(closeListener));
      setImmediate(() => process.exit(0));
      return null;
    }
    default: {
      const never: never = req;
      throw new Error(`unknown request ${JSON.stringify(never)}`);
    }
  }
}

// The lease check of every hosted node (mesh/node/lease.ts runs it every LEASE_CHECK_MS too); a cut node keeps
// enforcing its lease (it is alive, only unreachable), a crashed one has nothing left to stop.
setInterval(() => {
  for (const h of hosted.values()) if (h.down !== "crashed") h.node.checkLeases();
}, LEASE_CHECK_MS).unref();

process.on("message", (raw) => {
  const req = raw as HostRequest & { id: number };
  handle(req).then(
    (result) => process.send?.({ id: req.id, ok: true, result } satisfies HostReply),
    (error: unknown) =>
      process.send?.({ id: req.id, ok: false, error: (error as Error).message ?? String(error) } satisfies HostReply),
  );
});
process.on("disconnect", () => process.exit(0));
process.send?.({ id: 0, ok: true, result: "ready" } satisfies HostReply);

/**
 * Issue 35: `berth serve` answers its API while its first pass is still running, and describes every target once at
 * start. Real node daemons (in process, the memory transport) behind a connector that counts the describes each node
 * is sent and can hold every connection to one node until the test releases it: while it is held the first pass
 * cannot end (its describe of that node waits), and the API must answer meanwhile. Once released, the pass ends
 * ("first pass done" in the server's own log), and each node was sent one describe since the server started: the
 * takeover's describes serve the first tick too (before, the takeover and the tick each described every target).
 */
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseMessageFrame } from "../../src/core/protocol/messages.js";
import { saveKeyFile } from "../../src/keys/key-file.js";
import type { Connector, FrameStream } from "../../src/mesh/transport/frames.js";
import { API_BASE } from "../../src/server/openapi.js";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { notConfigured } from "../server/support.js";
import { type SeedFixture, seedFixture, waitFor } from "./support/in-process.js";

vi.setConfig({ testTimeout: 90_000 });

let fx: SeedFixture | null = null;
let server: RunningServer | null = null;
let release: (() => void) | null = null;

afterEach(async () => {
  release?.();
  await server?.close();
  server = null;
  await fx?.close();
  fx = null;
});

/** The method of a request frame, or null for any other frame. */
function requestMethod(frame: Uint8Array): string | null {
  const parsed = parseMessageFrame(frame);
  if (!parsed.ok || parsed.value.type !== "request") return null;
  const payload = JSON.parse(parsed.value.signed.payload) as { method?: unknown };
  return typeof payload.method === "string" ? payload.method : null;
}

/** Counts the describes sent to each address; every connection to a held address waits until it is released. */
class HoldingConnector implements Connector {
  readonly describes = new Map<string, number>();
  private held: { addr: string; open: Promise<void> } | null = null;

  constructor(private readonly inner: Connector) {}

  hold(addr: string): () => void {
    let open!: () => void;
    this.held = { addr, open: new Promise<void>((resolve) => (open = resolve)) };
    return open;
  }

  async connect(addr: string, signal?: AbortSignal): Promise<FrameStream> {
    // The call's timeout signal is not heeded: the describe stays out until the test releases it.
    if (this.held?.addr === addr) await this.held.open;
    const inner = await this.inner.connect(addr, signal);
    return {
      remote: inner.remote,
      ...(inner.peerKey !== undefined ? { peerKey: inner.peerKey } : {}),
      send: (frame) => {
        if (requestMethod(frame) === "describe") this.describes.set(addr, (this.describes.get(addr) ?? 0) + 1);
        return inner.send(frame);
      },
      recv: (limit) => inner.recv(limit),
      close: () => inner.close(),
    };
  }
}

describe("berth serve's start", () => {
  it("answers the API while its first pass is held on a node, then describes each target once for the takeover and the first tick", async () => {
    fx = await seedFixture();
    for (const n of fx.nodes) expect((await fx.controller.addTarget(n.addr, "paired")).ok).toBe(true);
    await fx.controller.close();
    saveKeyFile(join(fx.controllerDir, "keys", "controller.key"), fx.key);
    const connector = new HoldingConnector(fx.memory);
    const held = fx.nodes[0]!;
    release = connector.hold(held.addr);
    let log = "";
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    server = await startServer({
      dataDir: fx.controllerDir,
      ...(fx.database ? { database: fx.database } : {}),
      port: 0,
      connector,
      kubernetes: notConfigured,
      logLevel: "info",
      logStream,
      // One pass: the first, at start.
      tickMs: 3_600_000,
    });
    const ask = (path: string) =>
      fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${server!.token}` } });
    for (const path of ["/healthz", `${API_BASE}/placements`, `${API_BASE}/nodes`]) {
      const answer = await ask(path);
      expect(answer.status, `${path}: ${await answer.clone().text()}`).toBe(200);
    }
    // The pass waits on the held node's describe: everything above was answered while it ran.
    expect(log).not.toContain("first pass done");
    release();
    await waitFor(() => log.includes("first pass done"), "the first pass to end once the node is released");
    for (const n of fx.nodes) expect(connector.describes.get(n.addr), `describes sent to ${n.name}`).toBe(1);
  });
});

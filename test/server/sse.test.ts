/**
 * The audit event stream over a real socket: `fetch` with the bearer token and a stream reader (as the dashboard
 * reads it), resumed with Last-Event-ID; events another connection to the database commits (as the CLI would) arrive
 * through the tip poll; heartbeats; and `close()` ends open streams instead of hanging.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EngineChain } from "../../src/chain/engine-chain.js";
import { loadKeyFile } from "../../src/keys/key-file.js";
import { type RunningServer, startServer } from "../../src/server/server.js";
import { controllerKeyPath } from "../../src/server/state.js";
import { openStoreEngine } from "../../src/store/open.js";
import { databaseOption, testDatabaseFor } from "../support/test-database.js";
import { notConfigured } from "./support.js";

const running: Array<{ server: RunningServer; dir: string }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.server.close();
    rmSync(r.dir, { recursive: true, force: true });
  }
});

/** Each server's PostgreSQL address (undefined on SQLite), for a connection of another process's to its store. */
const databases = new Map<RunningServer, string | undefined>();

async function serve(): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), "berth-sse-"));
  const database = await testDatabaseFor(dir);
  const server = await startServer({
    dataDir: dir,
    port: 0,
    kubernetes: notConfigured,
    streamTimings: { pollMs: 100, heartbeatMs: 300 },
    ...databaseOption(database),
  });
  databases.set(server, database);
  running.push({ server, dir });
  return server;
}

interface Frame {
  readonly id: number | null;
  readonly event: string | null;
  readonly data: { seq: number; kind: string; payload: Record<string, unknown> } | null;
  readonly comment: string | null;
}

/** Reads SSE frames from a fetch body until `until` holds or the deadline passes. */
class StreamReader {
  private buffer = "";
  readonly frames: Frame[] = [];
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  ended = false;

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }

  async until(cond: (frames: readonly Frame[]) => boolean, what: string, deadlineMs = 30_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    while (!cond(this.frames)) {
      if (this.ended) throw new Error(`the stream ended before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `timed out waiting for ${what}; frames: ${JSON.stringify(this.frames.map((f) => f.id ?? f.comment))}`,
        );
      const chunk = await Promise.race([this.reader.read(), new Promise<null>((r) => setTimeout(() => r(null), left))]);
      if (chunk === null) continue;
      if (chunk.done) {
        this.ended = true;
        continue;
      }
      this.buffer += this.decoder.decode(chunk.value, { stream: true });
      let cut = this.buffer.indexOf("\n\n");
      while (cut >= 0) {
        this.frames.push(parseFrame(this.buffer.slice(0, cut)));
        this.buffer = this.buffer.slice(cut + 2);
        cut = this.buffer.indexOf("\n\n");
      }
    }
  }

  audit(): number[] {
    return this.frames.filter((f) => f.event === "audit").map((f) => f.id as number);
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

function parseFrame(text: string): Frame {
  let id: number | null = null;
  let event: string | null = null;
  let data: Frame["data"] = null;
  let comment: string | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith(":")) comment = line.slice(1).trim();
    else if (line.startsWith("id: ")) id = Number(line.slice(4));
    else if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data = JSON.parse(line.slice(6));
  }
  return { id, event, data, comment };
}

async function open(server: RunningServer, lastEventId?: number): Promise<StreamReader> {
  const headers: Record<string, string> = { authorization: `Bearer ${server.token}` };
  if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
  const r = await fetch(`${server.url}/api/v1/audit/stream`, { headers });
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toContain("text/event-stream");
  return new StreamReader(r.body as ReadableStream<Uint8Array>);
}

async function settle(server: RunningServer): Promise<void> {
  const r = await fetch(`${server.url}/api/v1/unsettled/settle`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(r.status).toBe(200);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("the audit event stream", { timeout: 90_000 }, () => {
  it("resumes after Last-Event-ID with every event once and in order, across a reconnect", async () => {
    const server = await serve();
    await settle(server);
    const head = async () => (await server.state.controller.store.chain.tip()).seq;
    const first = await open(server, 0);
    // Reading the stream chains nothing, so the head stays where the settle left it.
    const seen = await head();
    await first.until((f) => f.some((x) => x.id === seen), "events 1…head");
    expect(first.audit()).toEqual(range(1, seen));
    expect(first.frames.find((f) => f.id === 1)?.data?.kind).toBe("api.call");
    await first.cancel();

    await settle(server); // two more events while nobody listens
    const second = await open(server, seen);
    const now = await head();
    await second.until((f) => f.some((x) => x.id === now), "the events missed while disconnected");
    expect(second.audit()).toEqual(range(seen + 1, now));
    expect(second.frames.filter((f) => f.event === "audit").map((f) => f.data?.payload.phase)).toEqual([
      "request",
      "outcome",
    ]);
    await second.cancel();
  });

  it("without Last-Event-ID starts after the head; delivers this process's commits and another connection's, with heartbeats", async () => {
    const server = await serve();
    await settle(server);
    const startHead = (await server.state.controller.store.chain.tip()).seq;
    const stream = await open(server);
    await settle(server);
    await stream.until((f) => f.filter((x) => x.event === "audit").length === 2, "the live pair");
    expect(stream.audit()).toEqual([startHead + 1, startHead + 2]);

    // Another connection to the same database (as `berth` in another process): only the tip poll can see it.
    const other = await openStoreEngine({
      database: databases.get(server),
      sqlitePath: server.state.dbPaths.controller,
    });
    try {
      const chain = await EngineChain.open(other, loadKeyFile(controllerKeyPath(server.state.dataDir)), "controller");
      await other.transaction((tx) =>
        chain.append(tx, {
          source: "trust",
          kind: "peer.tier",
          payload: { node: "cli-test", tier: "paired", source: "cli" },
        }),
      );
    } finally {
      await other.close();
    }
    await stream.until(
      (f) => f.some((x) => x.data?.payload.node === "cli-test"),
      "the event written by another connection",
    );
    expect(stream.audit()).toEqual(range(startHead + 1, startHead + 3));
    await stream.until((f) => f.some((x) => x.comment === "heartbeat"), "a heartbeat");
    await stream.cancel();
  });

  it("a bad Last-Event-ID is a 400 naming the header; close() ends open streams", async () => {
    const server = await serve();
    const bad = await fetch(`${server.url}/api/v1/audit/stream`, {
      headers: { authorization: `Bearer ${server.token}`, "last-event-id": "seven" },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { issues: Array<{ path: string }> } }).error.issues[0]?.path).toBe(
      "headers.last-event-id",
    );
    const stream = await open(server);
    await stream.until((f) => f.length > 0, "the stream's opening comment");
    // A close that waited on the open stream would never return (the stream never ends by itself): the test's own
    // timeout says so, without a bound on the wall clock that a loaded machine can miss.
    await server.close();
    await stream.until(() => stream.ended, "the stream to end");
  });
});

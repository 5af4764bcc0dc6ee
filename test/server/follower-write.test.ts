/**
 * Issue 37 (F3): what a follower does with a write. It forwards it to the leader the store names now, or answers it
 * 503; either way it never runs the write itself — no handler is entered (each is wrapped to record it) and its chain
 * (read-only, from outside) does not move, even after its answer has gone. The store's leader view is the one thing
 * set by the test (the controller's `currentLeaderView`, what a follower reads from the lease row); the app, its
 * handlers and the SQLite store are real, and so is the forwarding hop (to a stand-in leader on a real socket).
 *
 * The regression it pins: the follower's answer came back through an `await` of a Fastify reply, which is a thenable
 * that settles with undefined once sent, so the follower read "I lead" after answering 503 and then ran the write
 * itself (seen in ha-postgres-processes: a place answered 503 during a PostgreSQL outage was placed after it).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { LeaderRow } from "../../src/core/mesh/leader-lease.js";
import { buildApp } from "../../src/server/app.js";
import type { Handlers } from "../../src/server/handler.js";
import { HANDLERS } from "../../src/server/server.js";
import { openServerState, type ServerState } from "../../src/server/state.js";
import { loadOrCreateToken } from "../../src/server/token.js";
import { openDatabase } from "../../src/store/sqlite.js";
import { notConfigured } from "./support.js";

let dir: string;
let token: string;
let state: ServerState;
let app: FastifyInstance;
let base: string;
const reached: string[] = [];
let leader: Server | null = null;

function chainSeqs(): number[] {
  const db = openDatabase(join(dir, "controller.db"), { readonly: true });
  try {
    return (db.prepare("SELECT seq FROM audit_event ORDER BY seq").all() as Array<{ seq: number }>).map((r) => r.seq);
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "berth-follower-write-"));
  token = loadOrCreateToken(dir);
  state = await openServerState({ dataDir: dir, version: "test", kubernetes: notConfigured });
  const spied: Handlers = Object.fromEntries(
    Object.entries(HANDLERS).map(([id, handler]) => [
      id,
      (input: Parameters<typeof handler>[0], ctx: Parameters<typeof handler>[1]) => {
        reached.push(id);
        return handler(input, ctx);
      },
    ]),
  );
  ({ app } = buildApp({ state, token, webRoot: join(dir, "no-web"), handlers: spied, logLevel: "silent" }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
afterEach(async () => {
  vi.restoreAllMocks();
  reached.length = 0;
  await new Promise<void>((r) => (leader ? leader.close(() => r()) : r()));
  leader = null;
});
afterAll(async () => {
  await app.close();
  await state.close();
  rmSync(dir, { recursive: true, force: true });
});

const rowOf = (address: string | null): LeaderRow => ({
  owner_id: "other-owner",
  epoch: 7,
  renewed_ms: Date.now(),
  ttl_ms: 2_500,
  address,
  host: "elsewhere",
  pid: 4242,
  released_ms: null,
});

/** This server follows: the store names `row` as the leader (read just now), or nobody. */
function follow(row: LeaderRow | null): void {
  vi.spyOn(state.controller, "currentLeaderView").mockResolvedValue({
    leading: false,
    epoch: null,
    leader: row,
    fresh: true,
  });
}

async function placeOn(url: string): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const r = await fetch(`${url}/api/v1/placements`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ package: join(dir, "no-package"), name: "written-once" }),
  });
  return { status: r.status, headers: r.headers, body: (await r.json()) as Record<string, unknown> };
}

/**
 * Everything this server still had to do for the write has run: the app has answered a later request on the same
 * event loop, after the write's own answer was sent (a handler the follower ran after its answer would have been
 * entered by then: it follows the answer in the same chain of promises, with no I/O of its own before it).
 */
async function settled(): Promise<void> {
  const r = await fetch(`${base}/api/v1/health`);
  expect(r.status).toBe(200);
  await r.text();
}

describe("a follower never runs a write itself (issue 37)", () => {
  it("a write answered 503 because nobody leads enters no handler and leaves the chain as it was", async () => {
    follow(null);
    const before = chainSeqs();
    const a = await placeOn(base);
    expect(a.status, JSON.stringify(a.body)).toBe(503);
    expect(a.body.error).toMatchObject({ code: "not_leader" });
    expect(a.headers.get("retry-after")).toBe("1");
    await settled();
    expect(reached).toEqual([]);
    expect(chainSeqs(), "the chain did not move").toEqual(before);
  });

  it("a write forwarded to the leader is answered with the leader's answer and done only there", async () => {
    const received: string[] = [];
    leader = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString("utf8");
      });
      req.on("end", () => {
        received.push(
          `${req.method} ${req.url} ${req.headers["x-berth-forwarded-by"] === undefined ? "direct" : "forwarded"} ${body}`,
        );
        res
          .writeHead(201, { "content-type": "application/json; charset=utf-8" })
          .end(JSON.stringify({ placed: "by the leader" }));
      });
    });
    await new Promise<void>((r) => leader?.listen(0, "127.0.0.1", () => r()));
    const leaderUrl = `http://127.0.0.1:${(leader.address() as { port: number }).port}`;
    follow(rowOf(leaderUrl));
    const before = chainSeqs();
    const a = await placeOn(base);
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.body).toEqual({ placed: "by the leader" });
    expect(a.headers.get("x-berth-leader")).toBe(leaderUrl);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatch(/^POST \/api\/v1\/placements forwarded .*"written-once"/);
    await settled();
    expect(reached).toEqual([]);
    expect(chainSeqs(), "the chain did not move").toEqual(before);
  });

  it("a write the leader refuses the forwarded token of is answered 503 and done nowhere", async () => {
    leader = createServer((_req, res) => {
      res
        .writeHead(401, { "content-type": "application/json; charset=utf-8" })
        .end(JSON.stringify({ error: { code: "unauthorized", message: "no" } }));
    });
    await new Promise<void>((r) => leader?.listen(0, "127.0.0.1", () => r()));
    follow(rowOf(`http://127.0.0.1:${(leader.address() as { port: number }).port}`));
    const before = chainSeqs();
    const a = await placeOn(base);
    expect(a.status, JSON.stringify(a.body)).toBe(503);
    expect(a.body.error).toMatchObject({ code: "not_leader" });
    await settled();
    expect(reached).toEqual([]);
    expect(chainSeqs(), "the chain did not move").toEqual(before);
  });

  it("a write the leader stopped answering is answered 503 leader_lost, naming the call id the leader records it under", async () => {
    let seenCallId: string | undefined;
    leader = createServer((req) => {
      seenCallId = req.headers["x-berth-call-id"] as string | undefined;
      req.on("data", () => undefined);
      req.on("end", () => req.socket.destroy()); // took the write, died before answering
    });
    await new Promise<void>((r) => leader?.listen(0, "127.0.0.1", () => r()));
    follow(rowOf(`http://127.0.0.1:${(leader.address() as { port: number }).port}`));
    const before = chainSeqs();
    const a = await placeOn(base);
    expect(a.status, JSON.stringify(a.body)).toBe(503);
    expect(a.body.error).toMatchObject({ code: "leader_lost" });
    expect(seenCallId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.body.call_id).toBe(seenCallId);
    expect(String((a.body.error as { message: string }).message)).toContain(String(seenCallId));
    await settled();
    expect(reached).toEqual([]);
    expect(chainSeqs(), "the chain did not move").toEqual(before);
  });
});

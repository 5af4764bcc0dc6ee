/**
 * The operator routes (contract-operator.ts) at the edge, in-process: authenticated like every private route, a
 * cross-site-shaped body (not JSON) refused before anything runs, every input validated with the field named, and
 * each write chained as an api.call pair. The real-process tier is test/cli/remote-operator.test.ts.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR_ROUTES } from "../../src/server/contract-operator.js";
import { API_BASE } from "../../src/server/openapi.js";
import { TEST_ENGINE } from "../support/test-database.js";
import { type ApiFixture, apiFixture, closeFixtures, type ErrorBody } from "./support.js";

let fx: ApiFixture;
beforeAll(async () => {
  fx = await apiFixture();
});
afterAll(closeFixtures);

const concrete = (path: string) => `${API_BASE}${path.replace("{ref}", "some-node")}`;

describe("the operator routes", () => {
  it("answer 401 without the token, and a write sent as text/plain is a 415 that chains nothing", async () => {
    for (const r of OPERATOR_ROUTES) {
      const a = await fx.call(r.method, concrete(r.path), {
        token: null,
        ...(r.method === "POST" ? { body: {} } : {}),
      });
      expect([a.status, (a.body as ErrorBody).error.code], `${r.method} ${r.path}`).toEqual([401, "unauthorized"]);
    }
    const before = (await fx.apiEvents()).length;
    for (const r of OPERATOR_ROUTES.filter((x) => x.mutating)) {
      const a = await fx.call(r.method, concrete(r.path), { raw: "{}", headers: { "content-type": "text/plain" } });
      expect(a.status, `${r.method} ${r.path}`).toBe(415);
    }
    expect((await fx.apiEvents()).length, "refused before the handler: nothing chained").toBe(before);
  });

  it("name the field of every invalid input", async () => {
    const cases: Array<[string, string, unknown, string]> = [
      ["POST", "/nodes/some-node/rehome", { reason: "   " }, "body.reason"],
      ["POST", "/nodes/some-node/rehome", { reason: "x", force: true }, "body.force"],
      ["POST", "/backup", { database: "agents.db" }, "body.database"],
      ["POST", "/audit/verify", { key: "not-hex" }, "body.key"],
      ["POST", "/audit/verify", { expect_head: { seq: -1, hash: "00" } }, "body.expect_head.seq"],
      [
        "POST",
        "/audit/verify",
        { checkpoints: [{ checkpoint: {}, sig: "x" }] },
        "body.checkpoints.0.checkpoint.chain_id",
      ],
      ["POST", "/audit/import", { lines: "" }, "body.lines"],
      ["POST", "/doctor/repair", { now: true }, "body.now"],
    ];
    for (const [method, path, body, field] of cases) {
      const a = await fx.call(method as "POST", `${API_BASE}${path}`, { body });
      const e = (a.body as ErrorBody).error;
      expect([a.status, e.code], `${path} ${JSON.stringify(body)}`).toEqual([400, "invalid_request"]);
      expect(
        e.issues?.map((i) => i.path),
        `${path} ${JSON.stringify(body)}`,
      ).toContain(field);
    }
    const q = await fx.call("GET", `${API_BASE}/audit/checkpoints?chain=mine`);
    expect([q.status, (q.body as ErrorBody).error.issues?.[0]?.path]).toEqual([400, "query.chain"]);
  });

  // One of the two, by the engine under test (never a skipped test): PostgreSQL is backed up with its own tools.
  const onPostgres = TEST_ENGINE === "postgres" ? it : () => {};
  const onSqlite = TEST_ENGINE === "sqlite" ? it : () => {};
  onPostgres("refuse to back up a PostgreSQL store, naming pg_dump, and chain the refusal", async () => {
    const a = await fx.call("POST", `${API_BASE}/backup`, { body: {} });
    expect([a.status, (a.body as ErrorBody).error.code], a.text.slice(0, 300)).toEqual([409, "postgres_store"]);
    expect((a.body as ErrorBody).error.message).toContain("pg_dump");
    expect((a.body as ErrorBody).error.message).not.toMatch(/:[^:@/]+@/);
    const calls = (await fx.apiEvents())
      .filter((e) => e.payload.route === `${API_BASE}/backup`)
      .map((e) => [e.payload.phase, e.payload.status ?? null]);
    expect(calls.slice(-2)).toEqual([
      ["request", null],
      ["outcome", 409],
    ]);
  });

  onSqlite("back up the controller database whole, checked by its SHA-256, and chain the call", async () => {
    const a = await fx.call("POST", `${API_BASE}/backup`, { body: {} });
    expect(a.status, a.text.slice(0, 300)).toBe(200);
    const b = a.body as { database: string; bytes: number; sha256: string; base64: string; events: number };
    const bytes = Buffer.from(b.base64, "base64");
    expect([b.database, bytes.length, createHash("sha256").update(bytes).digest("hex")]).toEqual([
      "controller.db",
      b.bytes,
      b.sha256,
    ]);
    expect(bytes.subarray(0, 15).toString()).toBe("SQLite format 3");
    expect(
      (await fx.call("POST", `${API_BASE}/backup`, { body: { database: "k8s.db" } })).status,
      "no k8s.db in this home",
    ).toBe(404);
    const calls = (await fx.apiEvents())
      .filter((e) => e.payload.route === `${API_BASE}/backup`)
      .map((e) => [e.payload.phase, e.payload.status ?? null]);
    // The last four: the invalid body of the test before is chained too (refused by the route's schema, outcome 400).
    expect(calls.slice(-4)).toEqual([
      ["request", null],
      ["outcome", 200],
      ["request", null],
      ["outcome", 404],
    ]);
  });

  it("answer doctor and an unknown node's rehome with their documents", async () => {
    expect((await fx.call("GET", `${API_BASE}/doctor`)).body).toEqual({ repaired: false, wedged: [], in_flight: [] });
    const r = await fx.call("POST", `${API_BASE}/nodes/0123456789abcdef0123456789abcdef/rehome`, {
      body: { reason: "test" },
    });
    expect([r.status, (r.body as { kind: string }).kind]).toEqual([404, "unknown_node"]);
  });
});

/**
 * issue 13, Operable: `/healthz`, `/readyz` and `/metrics` are real answers — not the dashboard's HTML, which every
 * probe used to "pass" on — and readiness fails when the store cannot be written.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/store/sqlite.js";
import { API_BASE } from "../../src/server/openapi.js";
import pg from "pg";
import { apiFixture, closeFixtures } from "./support.js";
import { TEST_ENGINE } from "../support/test-database.js";

afterEach(closeFixtures);

/** A built dashboard whose index.html would answer any unknown path. */
function webRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), "berth-web-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>berth dashboard</title>");
  return dir;
}

function metric(text: string, name: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

describe("health and readiness", () => {
  it("/healthz and /readyz answer JSON without a token, never the dashboard's page", async () => {
    const fx = await apiFixture({ webRoot: webRoot() });
    const health = await fx.call("GET", "/healthz", { token: null });
    expect([health.status, health.body, health.headers["content-type"]]).toEqual([
      200,
      { ok: true, version: "test" },
      "application/json; charset=utf-8",
    ]);
    const ready = await fx.call("GET", "/readyz", { token: null });
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      ready: true,
      checks: [
        { name: "controller_chain", ok: true, detail: null },
        { name: "store_writable", ok: true, detail: null },
        { name: "data_dir_writable", ok: true, detail: null },
      ],
    });
    for (const path of ["/healthz", "/readyz", "/metrics"])
      expect((await fx.call("GET", path)).text, path).not.toContain("berth dashboard");
    // The dashboard still answers its own routes.
    expect((await fx.call("GET", "/instances", { token: null })).text).toContain("berth dashboard");
  });

  /** Another process's writer, holding the store's write lock until `release` (engine by engine). */
  async function holdWriteLock(
    fx: Awaited<ReturnType<typeof apiFixture>>,
  ): Promise<{ code: string; release: () => Promise<void> }> {
    if (TEST_ENGINE === "sqlite") {
      const other = openDatabase(fx.state.dbPaths.controller);
      other.exec("BEGIN IMMEDIATE");
      const release = async () => {
        other.exec("ROLLBACK");
        other.close();
      };
      return { code: "SQLITE_BUSY", release };
    }
    // What every append takes first (engine-chain.ts): its chain's row, FOR UPDATE.
    const other = new pg.Client({ connectionString: fx.database });
    await other.connect();
    await other.query("BEGIN");
    await other.query("SELECT chain_id FROM audit_chain FOR UPDATE");
    const release = async () => {
      await other.query("ROLLBACK");
      await other.end();
    };
    return { code: "55P03", release };
  }

  it("/readyz is 503 naming store_writable while another process holds the store's write lock, and 200 again after", async () => {
    const fx = await apiFixture();
    const held = await holdWriteLock(fx);
    try {
      const locked = await fx.call("GET", "/readyz", { token: null });
      expect(locked.status).toBe(503);
      const checks = (
        locked.body as { ready: boolean; checks: Array<{ name: string; ok: boolean; detail: string | null }> }
      ).checks;
      expect(checks.filter((c) => !c.ok).map((c) => [c.name, c.detail])).toEqual([["store_writable", held.code]]);
    } finally {
      await held.release();
    }
    expect((await fx.call("GET", "/readyz", { token: null })).status).toBe(200);
  });

  it("/readyz is 503 when the controller's database is closed; /healthz still answers", async () => {
    const fx = await apiFixture();
    await fx.state.controller.close();
    const ready = await fx.call("GET", "/readyz", { token: null });
    expect(ready.status).toBe(503);
    expect(
      (ready.body as { checks: Array<{ name: string; ok: boolean }> }).checks.filter((c) => !c.ok).map((c) => c.name),
    ).toEqual(["controller_chain", "store_writable"]);
    expect((await fx.call("GET", "/healthz", { token: null })).status).toBe(200);
  });
});

describe("metrics", () => {
  it("/metrics needs the token", async () => {
    const fx = await apiFixture();
    const a = await fx.call("GET", "/metrics", { token: null });
    expect([a.status, (a.body as { error: { code: string } }).error.code]).toEqual([401, "unauthorized"]);
  });

  it("are Prometheus text: decisions, placements, nodes, unsettled, chain events and request latency by route and status", async () => {
    const fx = await apiFixture();
    await fx.call("GET", `${API_BASE}/nodes`);
    await fx.call("GET", `${API_BASE}/nodes`, { token: null });
    const first = await fx.call("GET", "/metrics");
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = first.text;
    for (const state of ["dispatching", "placed", "unplaced", "unsettled"])
      expect(metric(text, `berth_decisions{state="${state}"}`), state).toBe(0);
    for (const outcome of ["placed", "refused", "unreachable", "indeterminate", "gate_denied"])
      expect(metric(text, `berth_placement_attempts{outcome="${outcome}"}`), outcome).toBe(0);
    for (const route of ["native", "emulated"]) expect(metric(text, `berth_placements{route="${route}"}`)).toBe(0);
    for (const liveness of ["unknown", "alive", "suspect", "dead"])
      expect(metric(text, `berth_nodes{liveness="${liveness}"}`)).toBe(0);
    expect(metric(text, "berth_unsettled_decisions")).toBe(0);
    const events = (await fx.state.controller.store.chain.tip()).seq + 1;
    expect(metric(text, 'berth_chain_events_total{chain="controller"}')).toBe(events);
    expect(metric(text, 'berth_chain_events_total{chain="k8s"}')).toBe(0);
    expect(
      metric(text, 'berth_api_request_duration_seconds_count{method="GET",route="/api/v1/nodes",status="200"}'),
    ).toBe(1);
    expect(
      metric(text, 'berth_api_request_duration_seconds_count{method="GET",route="/api/v1/nodes",status="401"}'),
    ).toBe(1);
    expect(text).toContain("berth_process_resident_memory_bytes");
    // No keep-loop lag figure: none is measured, so there is none to publish (issue 13 named it berth_reconcile…).
    expect(text).not.toMatch(/^berth_reconcile/m);

    // A mutating call is two appends (its api.call pair): the counter moves by what the chain gained.
    await fx.call("POST", `${API_BASE}/unsettled/settle`, { body: {} });
    const second = (await fx.call("GET", "/metrics")).text;
    expect(metric(second, 'berth_chain_events_total{chain="controller"}')).toBe(
      (await fx.state.controller.store.chain.tip()).seq + 1,
    );
    expect((await fx.state.controller.store.chain.tip()).seq + 1).toBe(events + 2);
  });
});

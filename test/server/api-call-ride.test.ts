/**
 * Issue 19: a placement's `api.call` request rides the placement's first write transaction instead of committing
 * alone (src/store/riding-engine.ts). What must not change, judged from the chain, the store and the node daemon:
 * the request precedes everything the call chained, the outcome follows it before the answer, and a request that
 * cannot be chained means nothing was done — no decision, no event, nothing sent, no file in the package store.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { API_BASE } from "../../src/server/openapi.js";
import { TEST_ENGINE } from "../support/test-database.js";
import { cleanup, requireBuild } from "../mesh/harness.js";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { probePackage, writeJson } from "../mesh-controller/support/package.js";
import { type ApiFixture, apiFixture, closeFixtures, type ErrorBody, meshHome } from "./support.js";

const dirs: string[] = [];
afterEach(async () => {
  await closeFixtures();
  await cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Makes every `api` event insert fail from now on, as a full disk would for that one write (either engine). */
async function refuseApiEvents(fx: ApiFixture): Promise<void> {
  const sql =
    TEST_ENGINE === "postgres"
      ? `CREATE FUNCTION refuse_api() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$ LANGUAGE plpgsql;
         CREATE TRIGGER refuse_api BEFORE INSERT ON audit_event FOR EACH ROW WHEN (NEW.source = 'api') EXECUTE FUNCTION refuse_api();`
      : "CREATE TRIGGER refuse_api BEFORE INSERT ON audit_event WHEN NEW.source = 'api' BEGIN SELECT RAISE(ABORT, 'disk full'); END";
  await fx.state.controller.store.engine.transaction((tx) => tx.exec(sql));
}

/** A server over a home with one paired node daemon and the probe package registered; `onNode` lists its instances. */
async function placementHome() {
  requireBuild();
  const { dir, key, pkgDir, node } = await meshHome("berth-api-ride-", dirs);
  const fx = await apiFixture({ dir });
  const added = await fx.call("POST", `${API_BASE}/nodes`, { body: { addr: node.address, tier: "paired" } });
  expect(added.status, added.text).toBe(201);
  const stored = await fx.call("POST", `${API_BASE}/packages`, { body: { path: pkgDir } });
  expect(stored.status, stored.text).toBe(201);
  const observer = new NodeClient({
    key,
    connector: new TlsConnector({ identity: key, connectTimeoutMs: 2_000 }),
    timeoutMs: 5_000,
  });
  const onNode = async (): Promise<JsonObject[]> => {
    const r = await observer.call(node.target(), "status", { instance_id: null, include_departed: false });
    if (r.kind !== "ok") throw new Error(JSON.stringify(r));
    return (r.result.rows as JsonObject[]).filter((row) => typeof row.instance_id === "string");
  };
  return { fx, dir, key, packageId: (stored.body as { package_id: string }).package_id, onNode };
}

describe("an API placement's api.call request rides its first write (issue 19)", { timeout: 120_000 }, () => {
  it("chains the request before every event of the placement and the outcome after them, naming its decision", async () => {
    const { fx, packageId, onNode } = await placementHome();
    const before = (await fx.state.controller.store.chain.tip()).seq;
    const placed = await fx.call("POST", `${API_BASE}/placements`, { body: { package: packageId, name: "rides" } });
    expect(placed.status, placed.text).toBe(201);
    const report = placed.body as { decision_id: string; placed: { instance_id: string } };
    const events = await fx.state.controller.store.chain.find({ fromSeq: before + 1 });
    const shape = events.map((e) => [e.source, e.kind, e.payload.phase ?? null]);
    expect(shape[0]).toEqual(["api", "api.call", "request"]);
    expect(shape.at(-1)).toEqual(["api", "api.call", "outcome"]);
    expect(shape.slice(1, -1).filter(([source]) => source === "placement")).toEqual([
      ["placement", "workload.place", "decision"],
      ["placement", "workload.place", "placed"],
    ]);
    expect(events.find((e) => e.payload.phase === "decision")?.hash).toBe(report.decision_id);
    const [request, outcome] = [events[0]?.payload, events.at(-1)?.payload];
    expect(outcome).toMatchObject({
      call_id: request?.call_id,
      status: 201,
      error: null,
      refs: { decision_id: report.decision_id, instance_id: report.placed.instance_id },
    });
    expect((await onNode()).map((r) => r.instance_id)).toEqual([report.placed.instance_id]);
    expect((await fx.state.controller.store.chain.verifyStored()).ok).toBe(true);
  });

  it("when the request cannot be chained, answers 500 audit_unavailable: no decision, no event, nothing on the node", async () => {
    const { fx, packageId, onNode } = await placementHome();
    await refuseApiEvents(fx);
    const tip = await fx.state.controller.store.chain.tip();
    for (const path of ["/placements", "/placements/explain"]) {
      const refused = await fx.call("POST", `${API_BASE}${path}`, { body: { package: packageId, name: "unrecorded" } });
      expect([refused.status, (refused.body as ErrorBody).error.code], path).toEqual([500, "audit_unavailable"]);
    }
    expect(await fx.state.controller.store.chain.tip(), "nothing chained").toEqual(tip);
    expect(await fx.state.controller.store.decisionsIn("dispatching")).toEqual([]);
    expect(await fx.state.controller.placements()).toEqual([]);
    expect(await onNode(), "nothing was sent to place").toEqual([]);
  });

  it("a package named by its path is copied into the package store only after the request committed", async () => {
    const { fx, dir, onNode } = await placementHome();
    // A second trusted package, not in the store yet: placing it by path would copy it in before any write.
    const signer = generateSigningKey();
    const signers = JSON.parse(readFileSync(join(dir, "signers.json"), "utf8")) as JsonObject[];
    writeJson(join(dir, "signers.json"), [...signers, { key: signer.publicKey, name: "second" }]);
    const other = join(dir, "other");
    const otherId = probePackage(other, signer, { name: "second" });
    // The changed signers file is chained (policy.load) now, so the placement's first write comes after the copy.
    await fx.state.controller.targets();
    await refuseApiEvents(fx);
    const tip = await fx.state.controller.store.chain.tip();
    expect(existsSync(join(dir, "packages", otherId))).toBe(false);
    const refused = await fx.call("POST", `${API_BASE}/placements`, { body: { package: other, name: "by-path" } });
    expect([refused.status, (refused.body as ErrorBody).error.code]).toEqual([500, "audit_unavailable"]);
    expect(await fx.state.controller.store.chain.tip()).toEqual(tip);
    expect(existsSync(join(dir, "packages", otherId)), "nothing taken into the package store").toBe(false);
    expect(await onNode()).toEqual([]);
  });
});

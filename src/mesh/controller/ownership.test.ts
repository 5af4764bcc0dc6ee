/**
 * The controller store under owner leases (issue 21): two stores on one file are two owners; a live owner's
 * decision is moved by nobody else, recovery touches only a provably gone owner's, an illegal move is a typed
 * refusal, and a store wedged by an older berth is found and repaired.
 */
import { describe, expect, it } from "vitest";
import { engineHarness } from "../../../test/support/engines.js";
import { TEST_ENGINE } from "../../../test/support/test-database.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import type { StoreEngine } from "../../store/engine.js";
import {
  ControllerStore,
  type DecisionId,
  IllegalTransition,
  NameTaken,
  type PlacementRecord,
  type WorkloadRecord,
} from "./store.js";

// SQLite, or PostgreSQL with BERTH_TEST_DATABASE=postgres (scripts/test runs both).
const engines = engineHarness();
const KEY = signingKeyFromSeed(new Uint8Array(32).fill(1));
async function storeOn(engine: StoreEngine): Promise<ControllerStore> {
  return ControllerStore.open(engine, await EngineChain.open(engine, KEY, "controller"), Date.now);
}
/** Two owners of one store, as two processes are. */
async function twoOwners() {
  const first = await engines.open(TEST_ENGINE);
  const a = await storeOn(first);
  return { a, b: await storeOn(await engines.reopen(first)) };
}

const W: WorkloadRecord = {
  kind: "agent",
  network: "lan",
  secrets: false,
  cpu_millis: 0,
  memory_bytes: 0,
  labels: [],
  excludes: [],
  package_id: "c".repeat(64),
  signer_keys: [],
  file_hashes: [],
};
const NODE = "d".repeat(32);
const ev = (phase: string) => ({ source: "placement", kind: "workload.refuse", payload: { phase } });

function decide(store: ControllerStore, name: string): Promise<DecisionId> {
  return store.commitDecision({
    name,
    packageId: W.package_id,
    workload: W,
    dispatch: true,
    event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
    refusal: (error) => ev(error),
  });
}
function placement(id: string, instance = "probe-000000000001"): PlacementRecord {
  return {
    instance_id: instance,
    name: "probe",
    node_id: NODE,
    decision_id: id,
    variant: "v",
    route: "native",
    package_id: W.package_id,
    placed_ms: 1,
    adopted: false,
    pending: null,
  };
}
async function unsettle(store: ControllerStore, id: DecisionId): Promise<void> {
  await store.beginAttempt(id, 1, NODE, "v");
  await store.beginReconcile(id);
  await store.commitAttempt(
    id,
    1,
    { nodeId: NODE, variant: "v", outcome: "indeterminate", code: null, reason: "lost" },
    ev("dispatch"),
    { state: "unsettled", node_id: NODE, variant: "v" },
  );
}

describe("decisions under owner leases", () => {
  it("each store takes its own lease with a larger epoch, and each decision records its owner and epoch", async () => {
    const { a, b } = await twoOwners();
    expect(b.lease.epoch).toBeGreaterThan(a.lease.epoch);
    expect([a.lease.pid, a.lease.owner_id === b.lease.owner_id]).toEqual([process.pid, false]);
    const id = await decide(a, "probe");
    expect(await b.decision(id)).toMatchObject({ owner_id: a.lease.owner_id, epoch: a.lease.epoch });
  });

  it("another live owner cannot send, reconcile, settle or interrupt a decision in flight: each is a typed refusal", async () => {
    const { a, b } = await twoOwners();
    const id = await decide(a, "probe");
    await expect(b.beginAttempt(id, 1, NODE, "v")).rejects.toThrow(IllegalTransition);
    await a.beginAttempt(id, 1, NODE, "v");
    await a.beginReconcile(id);
    expect(await b.claimForSettle(id)).toMatchObject({ ok: false, error: { wedged: false } });
    await expect(b.commitPlaced(id, 1, placement(id), W, ev("placed"))).rejects.toThrow(IllegalTransition);
    expect(await b.commitInterrupted(id, true, () => ev("interrupted"))).toBe(false);
    expect((await a.decision(id))?.state).toBe("reconciling");
    expect((await b.events({ kind: "workload.refuse" })).filter((e) => e.phase === "interrupted")).toEqual([]);
  });

  it("a second decision for a name in flight names the live owner's pid instead of a placement to unload", async () => {
    const { a, b } = await twoOwners();
    await decide(a, "probe");
    let taken: unknown;
    try {
      await decide(b, "probe");
    } catch (error) {
      taken = error;
    }
    expect(taken).toBeInstanceOf(NameTaken);
    expect((taken as NameTaken).holder).toMatchObject({
      kind: "decision",
      state: "dispatching",
      owner: { pid: process.pid, alive: true },
    });
    expect((taken as NameTaken).message).toMatch(/in flight by pid \d+/);
  });

  it("a placed decision is never marked unsettled again: the store refuses it by type, not by a unique constraint", async () => {
    const { a } = await twoOwners();
    const id = await decide(a, "probe");
    await a.beginAttempt(id, 1, NODE, "v");
    await a.commitPlaced(id, 1, placement(id), W, ev("placed"));
    const late = a.commitAttempt(
      id,
      1,
      { nodeId: NODE, variant: "v", outcome: "indeterminate", code: null, reason: "x" },
      ev("dispatch"),
      { state: "unsettled", node_id: NODE, variant: "v" },
    );
    await expect(late).rejects.toThrow(IllegalTransition);
    expect((await a.decision(id))?.state).toBe("placed");
    expect((await a.chain.verifyStored()).ok).toBe(true);
  });

  it("only one of two settlers claims an unsettled decision", async () => {
    const { a, b } = await twoOwners();
    const id = await decide(a, "probe");
    await unsettle(a, id);
    expect(await b.claimForSettle(id)).toEqual({ ok: true });
    expect(await a.claimForSettle(id)).toMatchObject({ ok: false });
    await expect(
      a.commitSettle(
        (await a.decisionsIn("settling")).map((d) => ({
          ...d,
          decision_id: d.id as DecisionId,
          node_id: NODE,
          variant: "v",
        }))[0]!,
        null,
        ev("settled"),
      ),
    ).rejects.toThrow(IllegalTransition);
    await b.releaseSettle(id);
    expect((await a.unsettled()).map((d) => d.decision_id)).toEqual([id]);
  });

  it("recovery takes a decision whose owner released its lease and chains why; a live owner's it leaves alone", async () => {
    const { a, b } = await twoOwners();
    const id = await decide(a, "probe");
    await a.beginAttempt(id, 1, NODE, "v");
    expect(await b.commitInterrupted(id, true, () => ev("interrupted"))).toBe(false);
    await a.releaseLease();
    let why = "";
    expect(
      await b.commitInterrupted(id, true, (w) => {
        why = w;
        return ev("interrupted");
      }),
    ).toBe(true);
    expect(why).toMatch(/released its lease/);
    expect((await b.decision(id))?.state).toBe("unsettled");
  });

  it("a store wedged by an older berth (a placed decision marked unsettled again) is listed, skipped by settle with the doctor's advice, and repaired chained", async () => {
    const { a, b } = await twoOwners();
    const id = await decide(a, "probe");
    await a.beginAttempt(id, 1, NODE, "v");
    await a.commitPlaced(id, 1, placement(id), W, ev("placed"));
    await a.engine.transaction((tx) => tx.run("UPDATE mesh_decisions SET state = 'unsettled' WHERE id = ?", [id])); // what main's dispatch did
    expect(await b.wedged()).toEqual([
      { decision_id: id, name: "probe", instance_id: "probe-000000000001", node_id: NODE },
    ]);
    expect(await b.claimForSettle(id)).toMatchObject({
      ok: false,
      error: { wedged: true, reason: expect.stringContaining("berth doctor --repair") },
    });
    await b.commitRepair((await b.wedged())[0]!, { user: "tester" });
    expect([await b.wedged(), (await b.decision(id))?.state]).toEqual([[], "placed"]);
    expect(await b.events({ kind: "controller.repair" })).toMatchObject([
      { decision_id: id, from: "unsettled", to: "placed", operator: { user: "tester" } },
    ]);
    expect((await b.chain.verifyStored()).ok).toBe(true);
  });
});

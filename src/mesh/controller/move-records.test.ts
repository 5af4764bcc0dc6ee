import { describe, expect, it } from "vitest";
import { engineHarness } from "../../../test/support/engines.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import type { EngineKind, StoreEngine } from "../../store/engine.js";
import { MoveRecords } from "./move-records.js";
import { ControllerStore, type DecisionId, type PlacementRecord, type WorkloadRecord } from "./store.js";

/** On both engines, as store.test.ts: the v6 tables are the controller schema's on SQLite and on PostgreSQL. */
const harness = engineHarness();
const engineOf = (kind: EngineKind): Promise<StoreEngine> => harness.open(kind);

const NODE = "d".repeat(32);
const OTHER = "e".repeat(32);
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

function decide(store: ControllerStore, name: string): Promise<DecisionId> {
  return store.commitDecision({
    name,
    packageId: W.package_id,
    workload: W,
    dispatch: true,
    event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
    refusal: (error) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "decision", name, error } }),
  });
}

async function place(store: ControllerStore, name: string, node = NODE): Promise<PlacementRecord> {
  const id = await decide(store, name);
  const p: PlacementRecord = {
    instance_id: `${name}-000000000001`,
    name,
    node_id: node,
    decision_id: id,
    variant: "v",
    route: "native",
    package_id: W.package_id,
    placed_ms: 1,
    adopted: false,
    pending: null,
  };
  await store.beginAttempt(id, 1, node, "v");
  await store.commitPlaced(id, 1, p, W, { source: "placement", kind: "workload.place", payload: { phase: "placed" } });
  return p;
}

const event = (action: string) => ({
  source: "placement",
  kind: "workload.lifecycle",
  payload: { phase: "lifecycle", action },
});

describe.each(["sqlite", "postgres"] as const)(
  "the records of moving agents (issue 16) on %s",
  { timeout: 60_000 },
  (kind) => {
    async function open() {
      const engine = await engineOf(kind);
      const clock = () => 1_767_225_600_000;
      const chain = await EngineChain.open(engine, signingKeyFromSeed(new Uint8Array(32).fill(2)), "controller", clock);
      const store = await ControllerStore.open(engine, chain, clock);
      return { store, chain, moves: new MoveRecords(store, clock) };
    }

    it("taking a placement off its node frees its name and remembers the old copy, with its event, in one transaction", async () => {
      const { store, moves } = await open();
      const p = await place(store, "triage");
      const r = await moves.transferOut(p, "lease", event("reschedule"));
      expect(r).toMatchObject({
        ok: true,
        value: { instance_id: p.instance_id, node_id: NODE, authority: "lease", moves: 1, successor: null },
      });
      expect(await store.placements()).toEqual([]);
      expect(await store.events({ kind: "workload.lifecycle" })).toEqual([
        { phase: "lifecycle", action: "reschedule" },
      ]);
      // the name is free: a new decision for it commits
      await expect(decide(store, "triage")).resolves.toMatch(/^[0-9a-f]{64}$/);
    });

    it("refuses to take a record that changed since it was judged, and chains nothing then", async () => {
      const { store, moves } = await open();
      const p = await place(store, "triage");
      expect(await moves.transferOut({ ...p, node_id: OTHER }, "lease", event("x"))).toEqual({
        ok: false,
        error: "the placement record changed since it was judged",
      });
      await store.commitVerbOutcome(
        p.instance_id,
        { pending: "stop" },
        { source: "placement", kind: "workload.stop", payload: { phase: "outcome" } },
      );
      expect(await moves.transferOut(p, "lease", event("x"))).toMatchObject({
        ok: false,
        error: expect.stringContaining("pending"),
      });
      expect(await store.events({ kind: "workload.lifecycle" })).toEqual([]);
      expect(await store.placements()).toHaveLength(1);
    });

    it("counts the moves of a lineage through its successors, so the fifth move is the last one allowed", async () => {
      const { store, moves } = await open();
      let p = await place(store, "triage");
      for (let n = 1; n <= 5; n++) {
        const r = await moves.transferOut(p, "lease", event("reschedule"));
        expect(r.ok && r.value.moves).toBe(n);
        const next = await place(store, "triage");
        await moves.recordSuccessor(p.instance_id, next.decision_id, true, null);
        expect(await moves.movesOf(next.decision_id)).toBe(n);
        p = { ...next, instance_id: next.instance_id };
        await moves.dropMoved(`triage-000000000001`, null);
      }
    });

    it("forget marks the node, releases its placements and its unsettled decisions, all in one transaction with their events", async () => {
      const { store, moves, chain } = await open();
      const p = await place(store, "triage");
      await place(store, "elsewhere", OTHER);
      const lost = await decide(store, "scout");
      await store.beginAttempt(lost, 1, NODE, "v");
      await store.beginReconcile(lost);
      await store.commitAttempt(
        lost,
        1,
        { nodeId: NODE, variant: "v", outcome: "indeterminate", code: null, reason: "lost" },
        { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } },
        { state: "unsettled", node_id: NODE, variant: "v" },
      );
      const r = await moves.forget(NODE, "gone", {
        forgotten: (released) => ({
          source: "trust",
          kind: "node.forget",
          payload: { node: NODE, instances: released.instances, decisions: released.decisions },
        }),
        decision: (id) => ({
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "forgotten", decision_id: id, node: NODE },
        }),
      });
      expect(r.instances.map((m) => [m.instance_id, m.authority])).toEqual([[p.instance_id, "forget"]]);
      expect(r.decisions).toEqual([lost]);
      expect((await store.placements()).map((x) => x.name)).toEqual(["elsewhere"]);
      expect((await store.decision(lost))?.state).toBe("unplaced");
      expect(await store.unsettled()).toEqual([]);
      expect(await moves.admin(NODE)).toMatchObject({ cordoned: true, forget_reason: "gone" });
      expect(await moves.cordoned()).toEqual([NODE]);
      expect(await store.events({ kind: "node.forget" })).toEqual([
        { node: NODE, instances: [p.instance_id], decisions: [lost] },
      ]);
      expect((await chain.verifyStored()).ok).toBe(true);
    });

    it("a cordon is chained only when it changes", async () => {
      const { store, moves } = await open();
      const ev = { source: "trust", kind: "node.cordon", payload: { node: NODE } };
      expect(await moves.setCordon(NODE, true, "why", ev)).toBe(true);
      expect(await moves.setCordon(NODE, true, "why", ev)).toBe(false);
      expect(await moves.setCordon(NODE, false, "back", { ...ev, kind: "node.uncordon" })).toBe(true);
      expect(await store.events({ kind: "node.cordon" })).toHaveLength(1);
      expect(await moves.cordoned()).toEqual([]);
    });
  },
);

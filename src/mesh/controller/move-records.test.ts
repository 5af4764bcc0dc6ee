import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Chain } from "../../chain/chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import { openDatabase } from "../../store/sqlite.js";
import { MoveRecords } from "./move-records.js";
import { ControllerStore, type DecisionId, type PlacementRecord, type WorkloadRecord } from "./store.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const NODE = "d".repeat(32);
const OTHER = "e".repeat(32);
const W: WorkloadRecord = { kind: "agent", network: "lan", secrets: false, cpu_millis: 0, memory_bytes: 0, labels: [], excludes: [], package_id: "c".repeat(64), signer_keys: [], file_hashes: [] };

function open() {
  const dir = mkdtempSync(join(tmpdir(), "berth-moves-"));
  dirs.push(dir);
  const db = openDatabase(join(dir, "controller.db"));
  const chain = Chain.open(db, signingKeyFromSeed(new Uint8Array(32).fill(2)), "controller");
  const store = new ControllerStore(db, chain, () => 1_767_225_600_000);
  return { store, chain, moves: new MoveRecords(store, () => 1_767_225_600_000) };
}

function decide(store: ControllerStore, name: string): DecisionId {
  return store.commitDecision({
    name,
    packageId: W.package_id,
    workload: W,
    dispatch: true,
    event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
    refusal: (error) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "decision", name, error } }),
  });
}

function place(store: ControllerStore, name: string, node = NODE): PlacementRecord {
  const id = decide(store, name);
  const p: PlacementRecord = { instance_id: `${name}-000000000001`, name, node_id: node, decision_id: id, variant: "v", route: "native", package_id: W.package_id, placed_ms: 1, adopted: false, pending: null };
  store.beginAttempt(id, 1, node, "v");
  store.commitPlaced(id, 1, p, W, { source: "placement", kind: "workload.place", payload: { phase: "placed" } });
  return p;
}

const event = (action: string) => ({ source: "placement", kind: "workload.lifecycle", payload: { phase: "lifecycle", action } });

describe("the records of moving agents (issue 16)", () => {
  it("taking a placement off its node frees its name and remembers the old copy, with its event, in one transaction", async () => {
    const { store, moves } = open();
    const p = place(store, "triage");
    const r = await moves.transferOut(p, "lease", event("reschedule"));
    expect(r).toMatchObject({ ok: true, moved: { instance_id: p.instance_id, node_id: NODE, authority: "lease", moves: 1, successor: null } });
    expect(store.placements()).toEqual([]);
    expect(store.events({ kind: "workload.lifecycle" })).toEqual([{ phase: "lifecycle", action: "reschedule" }]);
    // the name is free: a new decision for it commits
    expect(() => decide(store, "triage")).not.toThrow();
  });

  it("refuses to take a record that changed since it was judged, and chains nothing then", async () => {
    const { store, moves } = open();
    const p = place(store, "triage");
    expect(await moves.transferOut({ ...p, node_id: OTHER }, "lease", event("x"))).toEqual({ ok: false, reason: "the placement record changed since it was judged" });
    store.commitVerbOutcome(p.instance_id, { pending: "stop" }, { source: "placement", kind: "workload.stop", payload: { phase: "outcome" } });
    expect(await moves.transferOut(p, "lease", event("x"))).toMatchObject({ ok: false, reason: expect.stringContaining("pending") });
    expect(store.events({ kind: "workload.lifecycle" })).toEqual([]);
    expect(store.placements()).toHaveLength(1);
  });

  it("counts the moves of a lineage through its successors, so the fifth move is the last one allowed", async () => {
    const { store, moves } = open();
    let p = place(store, "triage");
    for (let n = 1; n <= 5; n++) {
      const r = await moves.transferOut(p, "lease", event("reschedule"));
      expect(r.ok && r.moved.moves).toBe(n);
      const next = place(store, "triage");
      await moves.recordSuccessor(p.instance_id, next.decision_id, true, null);
      expect(await moves.movesOf(next.decision_id)).toBe(n);
      p = { ...next, instance_id: next.instance_id };
      await moves.dropMoved(`triage-000000000001`, null);
    }
  });

  it("forget marks the node, releases its placements and its unsettled decisions, all in one transaction with their events", async () => {
    const { store, moves, chain } = open();
    const p = place(store, "triage");
    place(store, "elsewhere", OTHER);
    const lost = decide(store, "scout");
    store.beginAttempt(lost, 1, NODE, "v");
    store.beginReconcile(lost);
    store.commitAttempt(lost, 1, { nodeId: NODE, variant: "v", outcome: "indeterminate", code: null, reason: "lost" }, { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } }, { state: "unsettled", node_id: NODE, variant: "v" });
    const r = await moves.forget(NODE, "gone", {
      forgotten: (released) => ({ source: "trust", kind: "node.forget", payload: { node: NODE, instances: released.instances, decisions: released.decisions } }),
      decision: (id) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "forgotten", decision_id: id, node: NODE } }),
    });
    expect(r.instances.map((m) => [m.instance_id, m.authority])).toEqual([[p.instance_id, "forget"]]);
    expect(r.decisions).toEqual([lost]);
    expect(store.placements().map((x) => x.name)).toEqual(["elsewhere"]);
    expect(store.decision(lost)?.state).toBe("unplaced");
    expect(store.unsettled()).toEqual([]);
    expect(await moves.admin(NODE)).toMatchObject({ cordoned: true, forget_reason: "gone" });
    expect(await moves.cordoned()).toEqual([NODE]);
    expect(store.events({ kind: "node.forget" })).toEqual([{ node: NODE, instances: [p.instance_id], decisions: [lost] }]);
    expect(chain.verifyStored().ok).toBe(true);
  });

  it("a cordon is chained only when it changes", async () => {
    const { store, moves } = open();
    const ev = { source: "trust", kind: "node.cordon", payload: { node: NODE } };
    expect(await moves.setCordon(NODE, true, "why", ev)).toBe(true);
    expect(await moves.setCordon(NODE, true, "why", ev)).toBe(false);
    expect(await moves.setCordon(NODE, false, "back", { ...ev, kind: "node.uncordon" })).toBe(true);
    expect(store.events({ kind: "node.cordon" })).toHaveLength(1);
    expect(await moves.cordoned()).toEqual([]);
  });
});

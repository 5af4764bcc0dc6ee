import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { Chain } from "../../chain/chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import { openDatabase } from "../../store/sqlite.js";
import { ControllerStore, NameTaken, type PlacementRecord, type WorkloadRecord } from "./store.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open() {
  const dir = mkdtempSync(join(tmpdir(), "berth-ctl-store-"));
  dirs.push(dir);
  const db = openDatabase(join(dir, "controller.db"));
  const chain = Chain.open(db, signingKeyFromSeed(new Uint8Array(32).fill(1)), "controller");
  return { db, chain, store: new ControllerStore(db, chain, () => 1_767_225_600_000) };
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

function commit(store: ControllerStore, name: string) {
  return store.commitDecision({
    name,
    packageId: W.package_id,
    workload: W,
    dispatch: true,
    event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
    refusal: (error) => ({ source: "placement", kind: "workload.refuse", payload: { phase: "decision", name, error } }),
  });
}

describe("the controller store (spec/mesh.md §14.1)", () => {
  it("a decision id is the hash of the committed decision event", () => {
    const { store, chain } = open();
    const id = commit(store, "triage");
    expect(chain.byHash(id)?.payload).toMatchObject({ phase: "decision", name: "triage" });
    expect(store.decision(id)?.state).toBe("dispatching");
  });

  it("a name with an open decision or a placement cannot be decided again, and the refusal is chained", () => {
    const { store } = open();
    const id = commit(store, "triage");
    expect(() => commit(store, "triage")).toThrow(NameTaken);
    expect(store.events({ kind: "workload.refuse" }).map((e) => e.error)).toEqual([
      expect.stringMatching(new RegExp(`^name triage is held by a decision in flight by pid ${process.pid} on .* \\(decision ${id}, dispatching\\); wait for it to finish$`)),
    ]);
    const placement: PlacementRecord = {
      instance_id: "triage-000000000001",
      name: "triage",
      node_id: "d".repeat(32),
      decision_id: id,
      variant: "v",
      route: "native",
      package_id: W.package_id,
      placed_ms: 1,
      adopted: false,
      pending: null,
    };
    store.beginAttempt(id, 1, placement.node_id, "v");
    store.commitPlaced(id, 1, placement, W, { source: "placement", kind: "workload.place", payload: { phase: "placed" } });
    expect(store.decision(id)?.state).toBe("placed");
    expect(() => commit(store, "triage")).toThrow(NameTaken);
    store.commitVerbOutcome(placement.instance_id, "remove", { source: "placement", kind: "workload.unload", payload: { phase: "outcome" } });
    expect(() => commit(store, "triage")).not.toThrow();
  });

  it("an unsettled decision keeps its name reserved until it is settled", () => {
    const { store } = open();
    const id = commit(store, "triage");
    store.beginAttempt(id, 1, "d".repeat(32), "v");
    store.beginReconcile(id);
    store.commitAttempt(id, 1, { nodeId: "d".repeat(32), variant: "v", outcome: "indeterminate", code: null, reason: "lost" }, { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } }, { state: "unsettled", node_id: "d".repeat(32), variant: "v" });
    expect(store.unsettled().map((d) => d.decision_id)).toEqual([id]);
    expect(() => commit(store, "triage")).toThrow(NameTaken);
    const [unsettled] = store.unsettled();
    expect(store.claimForSettle(id)).toEqual({ ok: true });
    store.commitSettle(unsettled!, null, { source: "placement", kind: "workload.place", payload: { phase: "settled", adopted: 0 } });
    expect(store.decision(id)?.state).toBe("unplaced");
    expect(() => commit(store, "triage")).not.toThrow();
  });

  it("every state change commits with its event: the chain verifies after any sequence of decisions and attempts", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.constantFrom("refused", "unsettled", "unplaced")), { maxLength: 12 }), (steps) => {
        const { store, chain, db } = open();
        try {
          for (const [name, ending] of steps) {
            let id: string;
            try {
              id = commit(store, name);
            } catch (error) {
              expect(error).toBeInstanceOf(NameTaken);
              continue;
            }
            store.beginAttempt(id as never, 1, "d".repeat(32), "v");
            if (ending === "unsettled") store.beginReconcile(id as never);
            store.commitAttempt(
              id as never,
              1,
              { nodeId: "d".repeat(32), variant: "v", outcome: "refused", code: "admission", reason: "x" },
              { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } },
              ending === "unsettled" ? { state: "unsettled", node_id: "d".repeat(32), variant: "v" } : ending === "unplaced" ? { state: "unplaced", exhausted: { source: "placement", kind: "workload.refuse", payload: { phase: "exhausted" } } } : null,
            );
          }
          // At most one open decision per name, whatever the sequence.
          const open = db.prepare("SELECT name, COUNT(*) AS n FROM mesh_decisions WHERE state IN ('dispatching','reconciling','unsettled','settling') GROUP BY name").all() as Array<{ n: number }>;
          expect(open.every((r) => r.n === 1)).toBe(true);
          expect(chain.verifyStored().ok).toBe(true);
        } finally {
          db.close();
        }
      }),
      { numRuns: 25 },
    );
  });
});

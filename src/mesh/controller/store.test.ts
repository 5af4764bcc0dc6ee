import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PLAIN_WORKLOAD } from "../../../test/support/workload.js";
import { engineHarness } from "../../../test/support/engines.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import type { EngineKind, StoreEngine } from "../../store/engine.js";
import { ControllerStore, NameTaken, type PlacementRecord } from "./store.js";

/**
 * Run on both engines: SQLite (embedded) and PostgreSQL (a throwaway server, test/support/postgres.ts, one fresh
 * database per store). The PostgreSQL tier never skips: a machine without PostgreSQL 15 fails it.
 */
const harness = engineHarness();
const engineOf = (kind: EngineKind): Promise<StoreEngine> => harness.open(kind);

const W = PLAIN_WORKLOAD;

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

describe.each(["sqlite", "postgres"] as const)(
  "the controller store (spec/mesh.md §14.1) on %s",
  { timeout: 60_000 },
  (kind) => {
    async function open() {
      const engine = await engineOf(kind);
      const clock = () => 1_767_225_600_000;
      const chain = await EngineChain.open(engine, signingKeyFromSeed(new Uint8Array(32).fill(1)), "controller", clock);
      return { engine, chain, store: await ControllerStore.open(engine, chain, clock) };
    }

    it("a decision id is the hash of the committed decision event", async () => {
      const { store, chain } = await open();
      const id = await commit(store, "triage");
      expect((await chain.byHash(id))?.payload).toMatchObject({ phase: "decision", name: "triage" });
      expect((await store.decision(id))?.state).toBe("dispatching");
    });

    it("a name with an open decision or a placement cannot be decided again, and the refusal is chained", async () => {
      const { store } = await open();
      const id = await commit(store, "triage");
      await expect(commit(store, "triage")).rejects.toThrow(NameTaken);
      expect((await store.events({ kind: "workload.refuse" })).map((e) => e.error)).toEqual([
        expect.stringMatching(
          new RegExp(
            `^name triage is held by a decision in flight by pid ${process.pid} on .* \\(decision ${id}, dispatching\\); wait for it to finish$`,
          ),
        ),
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
      await store.beginAttempt(id, 1, placement.node_id, "v");
      await store.commitPlaced(id, 1, placement, W, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "placed" },
      });
      expect((await store.decision(id))?.state).toBe("placed");
      await expect(commit(store, "triage")).rejects.toThrow(NameTaken);
      await store.commitVerbOutcome(placement.instance_id, "remove", {
        source: "placement",
        kind: "workload.unload",
        payload: { phase: "outcome" },
      });
      await expect(commit(store, "triage")).resolves.toMatch(/^[0-9a-f]{64}$/);
    });

    it("an unsettled decision keeps its name reserved until it is settled", async () => {
      const { store } = await open();
      const id = await commit(store, "triage");
      await store.beginAttempt(id, 1, "d".repeat(32), "v");
      await store.beginReconcile(id);
      await store.commitAttempt(
        id,
        1,
        { nodeId: "d".repeat(32), variant: "v", outcome: "indeterminate", code: null, reason: "lost" },
        { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } },
        { state: "unsettled", node_id: "d".repeat(32), variant: "v" },
      );
      expect((await store.unsettled()).map((d) => d.decision_id)).toEqual([id]);
      await expect(commit(store, "triage")).rejects.toThrow(NameTaken);
      const [unsettled] = await store.unsettled();
      expect(await store.claimForSettle(id)).toEqual({ ok: true });
      await store.commitSettle(unsettled!, null, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "settled", adopted: 0 },
      });
      expect((await store.decision(id))?.state).toBe("unplaced");
      await expect(commit(store, "triage")).resolves.toMatch(/^[0-9a-f]{64}$/);
    });

    it("a dispatch the store interrupted is handed to settle: unsettled on the node a request may be out to (dispatching or reconciling), unplaced when nothing was sent, and a decision that landed is left alone (issue 37 finding A, seeds 1443 and 1511)", async () => {
      const { store, chain } = await open();
      const node = "d".repeat(32);
      // A request was out (attempt `sending`) and the commit of its answer failed.
      const sending = await commit(store, "a");
      await store.beginAttempt(sending, 1, node, "v");
      expect(await store.handOverInterrupted(sending, null, "store failed")).toBe("unsettled");
      // The owner was reconciling a lost answer when the store failed (seed 1443: stuck `reconciling`, node_id null).
      const reconciling = await commit(store, "b");
      await store.beginAttempt(reconciling, 1, node, "v");
      await store.beginReconcile(reconciling);
      expect(await store.handOverInterrupted(reconciling, { n: 1, node_id: node, variant: "v" }, "store failed")).toBe(
        "unsettled",
      );
      // Nothing was sent: the name is released.
      const idle = await commit(store, "c");
      expect(await store.handOverInterrupted(idle, null, "store failed")).toBe("unplaced");
      // The placed commit landed though its acknowledgement was lost: nothing is written over it.
      const landed = await commit(store, "d");
      await store.beginAttempt(landed, 1, node, "v");
      const placement: PlacementRecord = {
        instance_id: "d-000000000001",
        name: "d",
        node_id: node,
        decision_id: landed,
        variant: "v",
        route: "native",
        package_id: W.package_id,
        placed_ms: 1,
        adopted: false,
        pending: null,
      };
      await store.commitPlaced(landed, 1, placement, W, {
        source: "placement",
        kind: "workload.place",
        payload: { phase: "placed" },
      });
      expect(await store.handOverInterrupted(landed, { n: 1, node_id: node, variant: "v" }, "store failed")).toBe(
        "placed",
      );

      expect((await store.unsettled()).map((d) => [d.decision_id, d.node_id]).sort()).toEqual(
        [
          [sending, node],
          [reconciling, node],
        ].sort(),
      );
      expect((await store.decision(idle))?.state).toBe("unplaced");
      expect((await store.attempts(sending)).map((a) => [a.state, a.outcome])).toEqual([["done", "indeterminate"]]);
      // Settle can take each one (claim), and the chain verifies.
      expect(await store.claimForSettle(sending)).toEqual({ ok: true });
      expect((await chain.verifyStored()).ok).toBe(true);
    });

    it("two stores writing one chain at once keep it one unbroken, verifying chain: the database serialises seq and link", async () => {
      const first = await open();
      const second = await engineOn(first.engine);
      const drafts = (who: string) =>
        Array.from({ length: 20 }, (_, i) => ({
          source: "trust",
          kind: "policy.load",
          payload: { file: `${who}-${i}`, sha256: null, ok: true },
        }));
      await Promise.all([
        ...drafts("a").map((d) => first.store.appendAll([d])),
        ...drafts("b").map((d) => second.store.appendAll([d])),
      ]);
      const events = await first.chain.find({ kind: "policy.load" });
      expect(events).toHaveLength(40);
      expect((await first.chain.verifyStored()).ok).toBe(true);
      expect((await second.chain.verifyStored()).ok).toBe(true);
    });

    it("four stores writing one chain at once, twenty writers each, all commit: a writer that waited for the chain is not turned away", async () => {
      // On PostgreSQL a writer that waited for the chain's lock inside its transaction read a snapshot older than the
      // writer before it, lost (40001) and retried; with this many at once the last ones ran out of attempts.
      const first = await open();
      const others = [await engineOn(first.engine), await engineOn(first.engine), await engineOn(first.engine)];
      const drafts = (who: string) =>
        Array.from({ length: 20 }, (_, i) => ({
          source: "trust",
          kind: "policy.load",
          payload: { file: `${who}-${i}`, sha256: null, ok: true },
        }));
      await Promise.all([first, ...others].flatMap((s, n) => drafts(`s${n}`).map((d) => s.store.appendAll([d]))));
      expect(await first.chain.find({ kind: "policy.load" })).toHaveLength(80);
      expect((await first.chain.verifyStored()).ok).toBe(true);
    });

    /** A second store (another process, in effect) on the same database as `engine`. */
    async function engineOn(engine: StoreEngine) {
      const other = await harness.reopen(engine);
      const clock = () => 1_767_225_600_000;
      const chain = await EngineChain.open(other, signingKeyFromSeed(new Uint8Array(32).fill(1)), "controller", clock);
      return { engine: other, chain, store: await ControllerStore.open(other, chain, clock) };
    }

    it("every state change commits with its event: the chain verifies after any sequence of decisions and attempts", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.constantFrom("refused", "unsettled", "unplaced")), {
            maxLength: 12,
          }),
          async (steps) => {
            const { store, chain, engine } = await open();
            try {
              for (const [name, ending] of steps) {
                let id: string;
                try {
                  id = await commit(store, name);
                } catch (error) {
                  expect(error).toBeInstanceOf(NameTaken);
                  continue;
                }
                await store.beginAttempt(id as never, 1, "d".repeat(32), "v");
                if (ending === "unsettled") await store.beginReconcile(id as never);
                await store.commitAttempt(
                  id as never,
                  1,
                  { nodeId: "d".repeat(32), variant: "v", outcome: "refused", code: "admission", reason: "x" },
                  { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } },
                  ending === "unsettled"
                    ? { state: "unsettled", node_id: "d".repeat(32), variant: "v" }
                    : ending === "unplaced"
                      ? {
                          state: "unplaced",
                          exhausted: { source: "placement", kind: "workload.refuse", payload: { phase: "exhausted" } },
                        }
                      : null,
                );
              }
              // At most one open decision per name, whatever the sequence.
              const open = await engine.read((q) =>
                q.all<{ n: number }>(
                  "SELECT name, COUNT(*) AS n FROM mesh_decisions WHERE state IN ('dispatching','reconciling','unsettled','settling') GROUP BY name",
                ),
              );
              expect(open.every((r) => r.n === 1)).toBe(true);
              expect((await chain.verifyStored()).ok).toBe(true);
            } finally {
              await engine.close();
            }
          },
        ),
        { numRuns: kind === "postgres" ? 8 : 25 },
      );
    });
  },
);

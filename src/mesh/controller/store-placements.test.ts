import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { engineHarness } from "../../../test/support/engines.js";
import { EngineChain } from "../../chain/engine-chain.js";
import { signingKeyFromSeed } from "../../core/crypto/ed25519.js";
import { type HistoryReads, isRead, placedSummary } from "../../core/placement/index.js";
import type { EngineKind } from "../../store/engine.js";
import { MoveRecords } from "./move-records.js";
import { ControllerStore, type DecisionId, type PlacementRecord, type WorkloadRecord } from "./store.js";
import { insertPlacement, summaryDrift } from "./store-placements.js";

/** On both engines, as store.test.ts: the summary tables are the controller schema's (v8) on SQLite and PostgreSQL. */
const harness = engineHarness();

const NODES = ["a".repeat(32), "b".repeat(32), "c".repeat(32)];
const LABELS = ["gpu-heavy", "noisy", "quiet"];
const CLOCK = 1_767_225_600_000;
const byName = <T extends { name: string }>(xs: readonly T[]): T[] =>
  [...xs].sort((a, b) => (a.name < b.name ? -1 : 1));

const workload = (memory: number, labels: string[], excludes: string[]): WorkloadRecord => ({
  kind: "agent",
  network: "lan",
  secrets: false,
  cpu_millis: 0,
  memory_bytes: memory,
  labels,
  excludes,
  package_id: "c".repeat(64),
  signer_keys: [],
  file_hashes: [],
});

type Op =
  | {
      readonly op: "place" | "adopt";
      readonly node: number;
      readonly memory: number;
      readonly labels: string[];
      readonly excludes: string[];
      readonly at: number;
    }
  | { readonly op: "unload" | "move"; readonly which: number }
  | { readonly op: "forget"; readonly node: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constantFrom("place" as const, "adopt" as const),
      node: fc.integer({ min: 0, max: NODES.length - 1 }),
      memory: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 33 })),
      labels: fc.subarray(LABELS),
      excludes: fc.subarray(LABELS),
      at: fc.integer({ min: CLOCK - 100_000, max: CLOCK }),
    }),
    weight: 4,
  },
  { arbitrary: fc.record({ op: fc.constantFrom("unload" as const, "move" as const), which: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({ op: fc.constant("forget" as const), node: fc.integer({ min: 0, max: NODES.length - 1 }) }),
    weight: 1,
  },
);

describe.each(["sqlite", "postgres"] as const)(
  "the placement history summary (issue 19) on %s",
  { timeout: 120_000 },
  (kind: EngineKind) => {
    async function open() {
      const engine = await harness.open(kind);
      const chain = await EngineChain.open(
        engine,
        signingKeyFromSeed(new Uint8Array(32).fill(3)),
        "controller",
        () => CLOCK,
      );
      const store = await ControllerStore.open(engine, chain, () => CLOCK);
      return { engine, store, moves: new MoveRecords(store, () => CLOCK) };
    }

    let serial = 0;
    async function decision(store: ControllerStore, name: string, w: WorkloadRecord): Promise<DecisionId> {
      return store.commitDecision({
        name,
        packageId: w.package_id,
        workload: w,
        dispatch: true,
        event: { source: "placement", kind: "workload.place", payload: { phase: "decision", name } },
        refusal: (error) => ({
          source: "placement",
          kind: "workload.refuse",
          payload: { phase: "decision", name, error },
        }),
      });
    }

    /** One op through the store's own verbs: a place, a settle that adopts, an unload, a move off, a forgotten node. */
    async function apply(s: Awaited<ReturnType<typeof open>>, op: Op): Promise<void> {
      const { store, moves } = s;
      if (op.op === "place" || op.op === "adopt") {
        const name = `w-${++serial}`;
        const w = workload(op.memory, op.labels, op.excludes);
        const node = NODES[op.node] as string;
        const id = await decision(store, name, w);
        const p: PlacementRecord = {
          instance_id: `${name}-000000000001`,
          name,
          node_id: node,
          decision_id: id,
          variant: "v",
          route: "native",
          package_id: w.package_id,
          placed_ms: op.at,
          adopted: op.op === "adopt",
          pending: null,
        };
        await store.beginAttempt(id, 1, node, "v");
        if (op.op === "place") {
          await store.commitPlaced(id, 1, p, w, {
            source: "placement",
            kind: "workload.place",
            payload: { phase: "placed" },
          });
          return;
        }
        await store.beginReconcile(id);
        const refuse = { source: "placement", kind: "workload.refuse", payload: { phase: "dispatch" } };
        await store.commitAttempt(
          id,
          1,
          { nodeId: node, variant: "v", outcome: "indeterminate", code: null, reason: "lost" },
          refuse,
          { state: "unsettled", node_id: node, variant: "v" },
        );
        const [unsettled] = (await store.unsettled()).filter((d) => d.decision_id === id);
        expect(await store.claimForSettle(id)).toEqual({ ok: true });
        await store.commitSettle(
          unsettled as NonNullable<typeof unsettled>,
          { placement: p, event: { source: "placement", kind: "workload.place", payload: { phase: "adopted" } } },
          { source: "placement", kind: "workload.place", payload: { phase: "settled" } },
        );
        return;
      }
      if (op.op === "forget") {
        await moves.forget(NODES[op.node] as string, "gone", {
          forgotten: () => ({ source: "placement", kind: "node.forget", payload: {} }),
          decision: (d) => ({
            source: "placement",
            kind: "workload.place",
            payload: { phase: "settled", decision: d },
          }),
        });
        return;
      }
      if (op.op !== "unload" && op.op !== "move") return;
      const placed = await store.placements();
      const p = placed[op.which % Math.max(1, placed.length)];
      if (p === undefined) return;
      if (op.op === "unload")
        await store.commitVerbOutcome(p.instance_id, "remove", {
          source: "placement",
          kind: "workload.unload",
          payload: { phase: "outcome" },
        });
      else
        expect(
          (
            await moves.transferOut(p, "lease", {
              source: "placement",
              kind: "workload.lifecycle",
              payload: { phase: "lifecycle" },
            })
          ).ok,
        ).toBe(true);
    }

    it("after every place, adoption, unload, move and forget the per-node totals are exactly the rows' own, and the labels their workloads'", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 12 }), async (ops) => {
          const s = await open();
          for (const op of ops) {
            await apply(s, op);
            expect(await s.engine.read((q) => summaryDrift(q))).toEqual([]);
          }
        }),
        { numRuns: kind === "postgres" ? 12 : 40 },
      );
    });

    it("a decision reads the totals of every placement and exactly the instances its reads select", async () => {
      const s = await open();
      const ops = fc.sample(
        opArb.filter((o) => o.op === "place"),
        { numRuns: 40, seed: 19 },
      );
      for (const op of ops) await apply(s, op);
      const all = (await s.store.placedWorkloads()).map(({ record, workload: w }) => ({
        node_id: record.node_id,
        name: record.name,
        labels: [...w.labels],
        excludes: [...w.excludes],
        memory_bytes: w.memory_bytes,
        placed_at_ms: record.placed_ms,
      }));
      const cases: HistoryReads[] = [
        { carrying: [], excluding: [], placedAfter: new Map() },
        { carrying: ["noisy"], excluding: [], placedAfter: new Map() },
        { carrying: [], excluding: ["quiet", "gpu-heavy"], placedAfter: new Map() },
        {
          carrying: ["quiet"],
          excluding: ["noisy"],
          placedAfter: new Map([
            [NODES[0] as string, CLOCK - 50_000],
            [NODES[2] as string, CLOCK - 10_000],
          ]),
        },
      ];
      for (const reads of cases) {
        const got = await s.store.placementHistory(reads);
        expect(got.placed).toEqual(placedSummary(all));
        expect(byName(got.instances)).toEqual(byName(all.filter((i) => isRead(reads, i))));
      }
    });

    it("a placement that rolls back leaves the totals as they were", async () => {
      const s = await open();
      await apply(s, { op: "place", node: 0, memory: 5, labels: ["noisy"], excludes: [], at: CLOCK });
      const before = await s.store.placementHistory({ carrying: ["noisy"], excluding: [], placedAfter: new Map() });
      const w = workload(7, ["noisy"], []);
      const p: PlacementRecord = {
        instance_id: "ghost-000000000001",
        name: "ghost",
        node_id: NODES[0] as string,
        decision_id: "f".repeat(64),
        variant: "v",
        route: "native",
        package_id: w.package_id,
        placed_ms: CLOCK,
        adopted: false,
        pending: null,
      };
      await expect(
        s.engine.transaction(async (tx) => {
          await insertPlacement(tx, p, w);
          throw new Error("the chain append failed");
        }),
      ).rejects.toThrow("the chain append failed");
      expect(await s.store.placementHistory({ carrying: ["noisy"], excluding: [], placedAfter: new Map() })).toEqual(
        before,
      );
      expect(await s.engine.read((q) => summaryDrift(q))).toEqual([]);
    });

    it("a workload the engine could not weigh is refused before its decision commits, and nothing is written", async () => {
      const s = await open();
      await expect(decision(s.store, "long", workload(0, ["x".repeat(200)], []))).rejects.toThrow(
        /cannot be weighed by the placement engine \(labels\.0/,
      );
      expect(await s.store.decisionsIn("dispatching")).toEqual([]);
      expect(await s.store.events({ kind: "workload.place" })).toEqual([]);
    });

    it("a store at schema version 7 gets its summary from the placements it already holds when it is opened", async () => {
      const s = await open();
      for (const op of [
        { op: "place", node: 0, memory: 3, labels: ["noisy", "quiet"], excludes: ["gpu-heavy"], at: CLOCK },
        { op: "place", node: 0, memory: 4, labels: [], excludes: [], at: CLOCK },
        { op: "place", node: 1, memory: 0, labels: [], excludes: ["noisy"], at: CLOCK },
      ] as const) {
        await apply(s, { ...op, labels: [...op.labels], excludes: [...op.excludes] });
      }
      const want = await s.store.placementHistory({
        carrying: ["noisy"],
        excluding: ["noisy"],
        placedAfter: new Map(),
      });
      // Back to version 7's layout, rows kept: no summary tables, no memory column, no decision event columns (v9).
      await s.engine.transaction(async (tx) => {
        await tx.exec(`
        DROP TABLE mesh_node_loads;
        DROP TABLE mesh_placement_labels;
        DROP INDEX mesh_placements_node_placed;
        ALTER TABLE mesh_placements DROP COLUMN memory_bytes;
        ALTER TABLE mesh_decisions DROP COLUMN event_chain_id;
        ALTER TABLE mesh_decisions DROP COLUMN event_seq;
      `);
        await tx.run("UPDATE berth_schema SET version = 7 WHERE component = 'mesh_controller'");
      });
      const again = await harness.reopen(s.engine);
      const chain = await EngineChain.open(
        again,
        signingKeyFromSeed(new Uint8Array(32).fill(3)),
        "controller",
        () => CLOCK,
      );
      const reopened = await ControllerStore.open(again, chain, () => CLOCK);
      const got = await reopened.placementHistory({
        carrying: ["noisy"],
        excluding: ["noisy"],
        placedAfter: new Map(),
      });
      expect(got.placed).toEqual(want.placed);
      expect(byName(got.instances)).toEqual(byName(want.instances));
      expect(want.instances.map((i) => i.labels)).toContainEqual(["noisy", "quiet"]);
      expect(want.placed).toEqual([
        { node_id: NODES[0], count: 2, memory_bytes: 7 },
        { node_id: NODES[1], count: 1, memory_bytes: 0 },
      ]);
      expect(await again.read((q) => summaryDrift(q))).toEqual([]);
    });
  },
);

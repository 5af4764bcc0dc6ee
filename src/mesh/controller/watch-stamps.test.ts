import { describe, expect, it } from "vitest";
import { ENGINE_KINDS, engineHarness } from "../../../test/support/engines.js";
import type { EngineKind } from "../../store/engine.js";
import { ensureControllerSchema } from "./store-schema.js";
import { leaseOfFacts, SentStamps, type SettleSend } from "./watch-stamps.js";

const NODE = "0123456789abcdef0123456789abcdef";
const engines = engineHarness();

async function stampsOn(kind: EngineKind) {
  const engine = await engines.open(kind);
  await engine.transaction((tx) => ensureControllerSchema(tx));
  const stamps = new SentStamps(engine);
  /** A stamp that must be written (its node is not held): how to settle it. */
  const record = async (nodeId: string, issuedAtMs: number): Promise<SettleSend> => {
    const r = await stamps.record(nodeId, issuedAtMs);
    if (typeof r !== "function") throw new Error(`the stamp was held: ${r.held}`);
    return r;
  };
  return {
    engine,
    stamps,
    s: { record, of: (n: string) => stamps.of(n), recordLease: stamps.recordLease.bind(stamps) },
  };
}

describe.each(ENGINE_KINDS)(
  "the controller's last-sent stamps (the node lease's rule 4) on %s",
  { timeout: 60_000 },
  (kind) => {
    it("keeps the latest stamp a request carried, and never lowers it when an older one is recorded later", async () => {
      const { s } = await stampsOn(kind);
      await s.record(NODE, 2_000);
      await s.record(NODE, 1_000);
      expect((await s.of(NODE)).last_sent_ms).toBe(2_000);
      await s.record(NODE, 3_000);
      expect((await s.of(NODE)).last_sent_ms).toBe(3_000);
    });

    it("takes back the stamp of a request that provably never left, and keeps one that may have arrived (issue 16)", async () => {
      const { s } = await stampsOn(kind);
      await (await s.record(NODE, 1_000))(true);
      const unsent = await s.record(NODE, 2_000);
      // pending: counted, whatever happens next
      expect((await s.of(NODE)).last_sent_ms).toBe(2_000);
      await unsent(false);
      expect((await s.of(NODE)).last_sent_ms).toBe(1_000);
      // a dead node tried every tick: its stamp stays where the last request that may have arrived put it
      for (let t = 3_000; t < 8_000; t += 1_000) await (await s.record(NODE, t))(false);
      expect((await s.of(NODE)).last_sent_ms).toBe(1_000);
      await (await s.record(NODE, 12_000))(true);
      expect((await s.of(NODE)).last_sent_ms).toBe(12_000);
    });

    it("a pending stamp below a settled one is dominated; one above it still counts until settled", async () => {
      const { s } = await stampsOn(kind);
      const low = await s.record(NODE, 1_000);
      const high = await s.record(NODE, 5_000);
      await (await s.record(NODE, 3_000))(true);
      expect((await s.of(NODE)).last_sent_ms).toBe(5_000);
      await high(false);
      expect((await s.of(NODE)).last_sent_ms).toBe(3_000);
      await low(false);
      expect((await s.of(NODE)).last_sent_ms).toBe(3_000);
    });

    it("two processes on one store raise one stamp, whatever order their concurrent records land in", async () => {
      const { engine } = await stampsOn(kind);
      const other = await engines.reopen(engine);
      await Promise.all([
        new SentStamps(engine).record(NODE, 5_000),
        new SentStamps(other).record(NODE, 4_000),
        new SentStamps(other).record(NODE, 3_000),
      ]);
      expect((await new SentStamps(other).of(NODE)).last_sent_ms).toBe(5_000);
    });

    it("records nothing for a first describe addressed to any node", async () => {
      const { s } = await stampsOn(kind);
      await s.record("*", 1_000);
      expect(await s.of("*")).toEqual({ node_id: "*", last_sent_ms: null, lease_ms: null });
    });

    it("keeps the lease the node's accepted facts advertise, and a recorded lease does not touch the stamp", async () => {
      const { s } = await stampsOn(kind);
      await s.record(NODE, 7_000);
      await s.recordLease(NODE, leaseOfFacts({ lease_ms: 60_000 }));
      expect(await s.of(NODE)).toEqual({ node_id: NODE, last_sent_ms: 7_000, lease_ms: 60_000 });
      await s.recordLease(NODE, leaseOfFacts({ lease_ms: null }));
      expect((await s.of(NODE)).lease_ms).toBeNull();
    });

    it("refuses, writing nothing, the stamp of a request to a leased node unanswered for half its lease; a node without a lease, or answering, is never held (issue 37, F5)", async () => {
      const { engine, stamps, s } = await stampsOn(kind);
      const OTHER = "fedcba9876543210fedcba9876543210";
      await engine.transaction(async (tx) => {
        await tx.run(
          "INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, unreachable_since_ms) VALUES (?, ?, ?, ?, ?, ?)",
          ["a:1", NODE, "k1", "paired", "api", 10_000],
        );
        await tx.run(
          "INSERT INTO mesh_targets (addr, node_id, key, tier, tier_source, unreachable_since_ms) VALUES (?, ?, ?, ?, ?, ?)",
          ["b:1", OTHER, "k2", "paired", "api", 10_000],
        );
      });
      await s.recordLease(NODE, 6_000);
      await s.recordLease(OTHER, null);
      // Unreachable since 10 s, lease 6 s: held from 13 s on.
      await (await s.record(NODE, 12_999))(true);
      const held = await stamps.record(NODE, 13_000);
      expect(held).toMatchObject({ held: expect.stringContaining("lease_ms 6000") });
      expect((await s.of(NODE)).last_sent_ms, "the held request left no stamp").toBe(12_999);
      // No lease: nothing to let run out, never held.
      expect(typeof (await stamps.record(OTHER, 99_000))).toBe("function");
      // The node answered again: sent and stamped as usual.
      await engine.transaction((tx) =>
        tx.run("UPDATE mesh_targets SET unreachable_since_ms = NULL, last_ok_ms = ? WHERE node_id = ?", [20_000, NODE]),
      );
      await (await s.record(NODE, 21_000))(true);
      expect((await s.of(NODE)).last_sent_ms).toBe(21_000);
    });
  },
);

describe("a node's advertised lease", () => {
  it("reads only a positive integer as a lease", () => {
    for (const v of [0, -5, 1.5, "60000", null, undefined]) expect(leaseOfFacts({ lease_ms: v })).toBeNull();
  });
});

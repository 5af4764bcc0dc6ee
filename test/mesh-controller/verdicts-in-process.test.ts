/**
 * Issue 19 (spec/mesh.md §7.7): the verdicts of a placement's consult over its view are chained once per distinct
 * verdict, each event naming its targets in `nodes`. Two real node daemons behind the in-process connector; the
 * chain is read back from the store, and the decision and its explain still show every target's own verdict.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type SeedFixture, seedFixture } from "./support/in-process.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

describe("a placement's gate verdicts over the view", () => {
  it("are one event for targets with the same verdict and one per other verdict, every target named once", async () => {
    fx = await seedFixture();
    const [first, second] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>, NonNullable<SeedFixture["nodes"][0]>];
    expect((await fx.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    expect((await fx.controller.addTarget(second.addr, "discovered")).ok).toBe(true);
    const gateEvents = async (from: number) =>
      (await fx!.controller.store.chain.find({ source: "gate", kind: "workload.place", fromSeq: from })).map((e) => [e.payload.decision, e.payload.nodes, e.payload.node]);

    // `discovered` is below the test permit's tier: that target is denied, the other permitted, two verdicts.
    const before = (await fx.controller.store.chain.tip()).seq + 1;
    const split = await fx.controller.place({ package: fx.pkgDir, name: "split", config: { mode: "service" } });
    expect(split.placed?.node_id).toBe(first.id);
    expect(await gateEvents(before)).toEqual([
      ["permit", [first.id], undefined],
      ["deny", [second.id], undefined],
    ]);
    const denied = split.decision.candidates.find((c) => c.node_id === second.id);
    expect(denied?.eligible).toBe(false);
    expect(split.explain).toContain(second.id);

    // The same tier for both: one verdict event naming both, sorted.
    await fx.controller.setTier(second.addr, "paired");
    const again = (await fx.controller.store.chain.tip()).seq + 1;
    const both = await fx.controller.place({ package: fx.pkgDir, name: "both", config: { mode: "service" } });
    expect(both.placed).not.toBeNull();
    expect(await gateEvents(again)).toEqual([["permit", [first.id, second.id].sort(), undefined]]);
    expect(both.decision.candidates.map((c) => c.eligible)).toEqual([true, true]);
    expect((await fx.controller.store.chain.verifyStored()).ok).toBe(true);
  });
});

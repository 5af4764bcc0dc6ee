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

  it("commit in the transaction of what they led to, just before it: the decision (with its stored order), or the refusal of a taken name (issue 19)", async () => {
    fx = await seedFixture();
    const [first] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>];
    expect((await fx.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    const { store } = fx.controller;
    // Each transaction's appends, read back after it commits (one writer at a time: the tip moves only by its own).
    const commits: string[][] = [];
    const engine = store.engine as { transaction: typeof store.engine.transaction };
    const transaction = engine.transaction.bind(store.engine);
    const orders = async () => Number((await store.engine.read((q) => q.get<{ n: number }>("SELECT COUNT(*) AS n FROM mesh_orders")))?.n);
    engine.transaction = async (fn, options) => {
      const from = (await store.chain.tip()).seq + 1;
      const ordersBefore = await orders();
      const value = await transaction(fn, options);
      const appended = (await store.chain.find({ fromSeq: from })).map((e) => `${e.source}/${e.kind}${typeof e.payload.phase === "string" ? `:${e.payload.phase}` : ""}`);
      if ((await orders()) > ordersBefore) appended.push("stored order");
      if (appended.length > 0) commits.push(appended);
      return value;
    };
    const placed = await fx.controller.place({ package: fx.pkgDir, name: "rides", config: { mode: "service" } });
    expect(placed.placed).not.toBeNull();
    await expect(fx.controller.place({ package: fx.pkgDir, name: "rides", config: { mode: "service" } })).rejects.toMatchObject({ code: "name_taken" });
    expect(
      commits.filter((c) => c.some((k) => k.startsWith("gate/"))),
      JSON.stringify(commits),
    ).toEqual([
      ["gate/workload.place", "placement/workload.place:decision", "stored order"],
      ["gate/workload.place", "placement/workload.refuse:decision"],
    ]);
  });
});

/**
 * The three scenarios of the seed (spec/mesh.md §18.1), in one process: two node daemons behind the in-process
 * connector, wrapped by a fault-injecting connector. Invariants: I1 (at most one instance per decision), I2 (no
 * orphan after settle), I3 (no automatic kill of a live instance).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import {
  controllerEvents,
  groupAlive,
  instancesOn,
  nodeEvents,
  type SeedFixture,
  seedFixture,
  verifyNodeChain,
  waitFor,
} from "./support/in-process.js";
import { NO_START_PERMIT, TEST_PERMIT } from "./support/package.js";

let fx: SeedFixture | null = null;

afterEach(async () => {
  await fx?.close();
  fx = null;
});

async function pairedTargets(f: SeedFixture): Promise<void> {
  for (const n of f.nodes) {
    const added = await f.controller.addTarget(n.addr, "paired");
    expect(added.ok, JSON.stringify(added)).toBe(true);
  }
}

function order(f: SeedFixture) {
  return { package: f.pkgDir, config: { mode: "service" as const }, start: true, prefer: [f.nodes[0]!.id] };
}

async function chainsVerify(f: SeedFixture): Promise<void> {
  expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);
  for (const n of f.nodes) expect(verifyNodeChain(n)).toBe(true);
}

describe("seed scenarios in process (I1, I2, I3)", () => {
  it("a start failure after load is unloaded on the refusing node and the next candidate places", async () => {
    fx = await seedFixture({ permits: [[NO_START_PERMIT], [TEST_PERMIT]] });
    const [bad, good] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>, NonNullable<SeedFixture["nodes"][0]>];
    await pairedTargets(fx);

    const r = await fx.controller.place(order(fx));
    expect(r.attempts, r.explain).toHaveLength(2);
    expect(r.attempts[0]?.outcome).toBe("refused");
    expect(r.attempts[0]?.code).toBe("governance");
    expect(r.attempts[0]?.reason).toContain("start failed");
    expect(r.attempts[0]?.reason).toContain("unloaded");
    expect(await instancesOn(bad, fx.key, fx.memory), "no instance left on the refusing node").toHaveLength(0);
    expect(
      nodeEvents(bad, "workload.unload").some((e) => e.source === "runtime"),
      "the rollback unload is chained on the target",
    ).toBe(true);
    expect(r.placed?.node_id).toBe(good.id);
    expect(await instancesOn(good, fx.key, fx.memory)).toHaveLength(1);

    const unload = await fx.controller.instance("unload", r.placed!.instance_id);
    expect(unload.kind, JSON.stringify(unload)).toBe("ok");
    expect(await instancesOn(good, fx.key, fx.memory)).toHaveLength(0);
    expect(await fx.controller.placements()).toHaveLength(0);
    await chainsVerify(fx);
  });

  it("a lost place answer is reconciled before the next candidate and exactly one instance exists", async () => {
    fx = await seedFixture();
    const [first, second] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>, NonNullable<SeedFixture["nodes"][0]>];
    await pairedTargets(fx);
    fx.faults.dropNextPlaceAnswer(first.addr);

    const r = await fx.controller.place(order(fx));
    expect(fx.faults.dropped).toBe(1);
    expect(r.attempts, r.explain).toHaveLength(2);
    expect(r.attempts[0]?.outcome).toBe("indeterminate");
    expect(r.attempts[0]?.reason).toContain("reconciled: unloaded 1 instance");
    expect(await instancesOn(first, fx.key, fx.memory), "the orphan on the first node was unloaded").toHaveLength(0);
    const spawned = nodeEvents(first, "workload.start")
      .map((e) => e.payload.pid)
      .filter((p): p is number => typeof p === "number");
    expect(spawned).toHaveLength(1);
    await waitFor(() => !groupAlive(spawned[0]!), "the orphan's process group to be gone");
    expect(r.placed?.node_id).toBe(second.id);
    expect(await instancesOn(second, fx.key, fx.memory), "exactly one instance").toHaveLength(1);
    expect(
      (await controllerEvents(fx.controller, "workload.refuse")).some(
        (e) => e.outcome === "indeterminate" && e.next === "trying the next candidate",
      ),
    ).toBe(true);

    expect((await fx.controller.instance("unload", r.placed!.instance_id)).kind).toBe("ok");
    await chainsVerify(fx);
  });

  it("an unreconcilable lost answer stops placement, stays unsettled, and is adopted and unloaded through the controller after the partition heals", async () => {
    fx = await seedFixture();
    const [first, second] = fx.nodes as [NonNullable<SeedFixture["nodes"][0]>, NonNullable<SeedFixture["nodes"][0]>];
    await pairedTargets(fx);
    fx.faults.dropNextPlaceAnswer(first.addr, true);

    const r = await fx.controller.place(order(fx));
    expect(r.attempts, `no second candidate: ${r.explain}`).toHaveLength(1);
    expect(r.attempts[0]?.outcome).toBe("indeterminate");
    expect(r.placed).toBeNull();
    expect(r.attempts[0]?.reason).toContain("not reconciled");
    expect(await instancesOn(second, fx.key, fx.memory), "no duplicate placed").toHaveLength(0);
    const held = await instancesOn(first, fx.key, fx.memory);
    expect(held, "the only instance").toHaveLength(1);
    expect(
      (await controllerEvents(fx.controller, "workload.refuse")).some(
        (e) => e.outcome === "indeterminate" && e.next === "stopped: the target may hold the instance",
      ),
    ).toBe(true);
    // Still partitioned: the decision stays unsettled, nothing adopted.
    expect(await fx.controller.unsettled()).toHaveLength(1);
    expect(await fx.controller.settleUnsettled()).toBe(0);
    expect(await fx.controller.placements()).toHaveLength(0);

    // The partition heals: the instance the lost answer left is adopted and managed from the controller.
    fx.faults.heal(first.addr);
    const iid = String(held[0]?.instance_id);
    const st = await fx.controller.instance("status", iid);
    expect(st.kind, JSON.stringify(st)).toBe("ok");
    expect(st.kind === "ok" ? ((st.result.status as JsonObject).state as string) : null).toBe("running");
    expect(await fx.controller.unsettled()).toHaveLength(0);
    const rec = (await fx.controller.placements())[0];
    expect([rec?.node_id, rec?.decision_id]).toEqual([first.id, r.decision_id]);
    expect(
      (await controllerEvents(fx.controller, "workload.place")).some(
        (e) => e.phase === "adopted" && e.instance_id === iid,
      ),
    ).toBe(true);
    expect((await fx.controller.instance("unload", iid)).kind).toBe("ok");
    expect(await instancesOn(first, fx.key, fx.memory), "unloaded through the controller").toHaveLength(0);
    await chainsVerify(fx);
  });
});

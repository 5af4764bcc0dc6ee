/**
 * Persistence, restart and further faults in process (spec/mesh.md §14, §18.3): a restarted controller trusts nothing it
 * has not re-described, resolves decisions a crash left behind without duplicating or orphaning anything, keeps
 * unsettled decisions until they can be settled, treats a late answer as lost, and survives a node restart between
 * describe and place.
 */
import { afterEach, describe, expect, it } from "vitest";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { controllerEvents, instancesOn, nodeEvents, type SeedFixture, seedFixture } from "./support/in-process.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

const nodesOf = (f: SeedFixture) => f.nodes as [SeedFixture["nodes"][0] & object, SeedFixture["nodes"][0] & object];

async function paired(f: SeedFixture): Promise<void> {
  for (const n of f.nodes) expect((await f.controller.addTarget(n.addr, "paired")).ok).toBe(true);
}

async function instanceCount(f: SeedFixture): Promise<number> {
  let n = 0;
  for (const node of f.nodes) n += (await instancesOn(node, f.key, f.memory)).length;
  return n;
}

class Crash extends Error {}

describe("controller restart and persistence", () => {
  it("after a restart every target keeps its stored liveness but has no boot id (nothing is sent) until described again with its stored key, and placements survive", async () => {
    fx = await seedFixture();
    await paired(fx);
    const r = await fx.controller.place({ package: fx.pkgDir });
    expect(r.placed).not.toBeNull();
    const c = await fx.reopen();
    const before = await c.targets();
    // Liveness is the store's (issue 16): what the last contact showed; the boot id is this process's own.
    expect(before.map((t) => [t.liveness, t.boot_id])).toEqual([
      ["alive", null],
      ["alive", null],
    ]);
    expect(await c.placements()).toEqual([r.placed]);
    await c.start();
    expect((await c.targets()).every((t) => t.liveness === "alive")).toBe(true);
    expect((await c.instance("unload", r.placed!.instance_id)).kind).toBe("ok");
  });

  it("a crash after chaining the decision but before sending leaves the decision unplaced with an interrupted event, nothing anywhere, and the name free", async () => {
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterDecision: () => {
            throw new Crash("killed after chaining the decision");
          },
        },
      },
    });
    await paired(fx);
    await expect(fx.controller.place({ package: fx.pkgDir })).rejects.toBeInstanceOf(Crash);
    const c = await fx.reopen({ hooks: {} });
    const interrupted = (await controllerEvents(c, "workload.refuse")).filter((e) => e.phase === "interrupted");
    expect(interrupted).toHaveLength(1);
    expect(interrupted[0]?.reason).toBe("controller restarted before dispatch");
    expect((await c.store.decision(String(interrupted[0]?.decision_id)))?.state).toBe("unplaced");
    expect(await c.unsettled()).toHaveLength(0);
    expect(await instanceCount(fx)).toBe(0);
    const again = await c.place({ package: fx.pkgDir });
    expect(again.placed, "the name is free again").not.toBeNull();
    expect(await instanceCount(fx)).toBe(1);
  });

  it("a crash after an attempt was marked sending leaves the decision unsettled on restart, and settling releases it when the node holds nothing", async () => {
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterAttemptBegun: () => {
            throw new Crash("killed after marking the attempt sending");
          },
        },
      },
    });
    await paired(fx);
    await expect(fx.controller.place({ package: fx.pkgDir })).rejects.toBeInstanceOf(Crash);
    const c = await fx.reopen({ hooks: {} });
    expect(await c.unsettled()).toHaveLength(1);
    expect(
      (await controllerEvents(c, "workload.refuse")).some(
        (e) => e.phase === "interrupted" && e.next === "stopped: the target may hold the instance",
      ),
    ).toBe(true);
    const report = await c.start();
    expect([report.adopted, report.settledEmpty]).toEqual([0, 1]);
    expect(await c.unsettled()).toHaveLength(0);
    expect(await instanceCount(fx)).toBe(0);
    expect((await c.place({ package: fx.pkgDir })).placed).not.toBeNull();
  });

  it("an unsettled decision survives a controller restart and is adopted by the restarted controller once the node answers", async () => {
    fx = await seedFixture();
    const [first] = nodesOf(fx);
    await paired(fx);
    fx.faults.dropNextPlaceAnswer(first.addr, true);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    expect(r.unsettled).toBe(true);
    const c = await fx.reopen();
    expect((await c.unsettled()).map((d) => d.decision_id)).toEqual([r.decision_id]);
    expect((await c.start()).adopted).toBe(0);
    fx.faults.heal(first.addr);
    expect((await c.start()).adopted).toBe(1);
    expect((await c.placements()).map((p) => [p.node_id, p.decision_id, p.adopted])).toEqual([
      [first.id, r.decision_id, true],
    ]);
    expect(await instanceCount(fx)).toBe(1);
  });
});

describe("further faults", () => {
  it("a decision whose commit answered with an error after it committed is handed over at once: unplaced with nothing sent, and the name free while the controller lives", async () => {
    fx = await seedFixture();
    await paired(fx);
    const store = fx.controller.store;
    const commitDecision = store.commitDecision.bind(store);
    store.commitDecision = async (args) => {
      store.commitDecision = commitDecision;
      await commitDecision(args);
      throw new Error("the answer to COMMIT was lost");
    };
    await expect(fx.controller.place({ package: fx.pkgDir })).rejects.toThrow("the answer to COMMIT was lost");
    expect(await fx.controller.store.decisionsIn("dispatching")).toHaveLength(0);
    expect(await fx.controller.store.decisionsIn("unplaced")).toHaveLength(1);
    expect(await instanceCount(fx)).toBe(0);
    expect((await fx.controller.place({ package: fx.pkgDir })).placed, "the name is free again").not.toBeNull();
    expect(await instanceCount(fx)).toBe(1);
  });

  it("a dispatch that fails with an error nobody classified hands its decision over while the controller lives: unsettled at once, then adopted, never left dispatching (network world, seed 8206)", async () => {
    fx = await seedFixture();
    const [first] = nodesOf(fx);
    await paired(fx);
    // The node starts the instance; the commit of its answer fails with an error that is not the store being away
    // (what node-postgres throws for a pooled client whose connection broke is one such).
    const store = fx.controller.store;
    const commitPlaced = store.commitPlaced.bind(store);
    store.commitPlaced = async () => {
      store.commitPlaced = commitPlaced;
      throw new Error("an error nobody classified");
    };
    await expect(fx.controller.place({ package: fx.pkgDir, prefer: [first.id] })).rejects.toThrow(
      "an error nobody classified",
    );
    // On main before the fix the decision stayed `dispatching` under this live owner: not listed here, and every later
    // placement of its name refused as held by a decision in flight.
    const unsettled = await fx.controller.unsettled();
    expect(unsettled.map((d) => d.node_id)).toEqual([first.id]);
    expect(await instanceCount(fx)).toBe(1);
    expect((await fx.controller.start()).adopted).toBe(1);
    expect(await fx.controller.unsettled()).toHaveLength(0);
    expect((await fx.controller.placements()).map((p) => [p.node_id, p.adopted])).toEqual([[first.id, true]]);
    expect(await instanceCount(fx)).toBe(1);
  });

  it("an answer that arrives after the timeout is indeterminate, reconciled, and exactly one instance results", async () => {
    fx = await seedFixture({ controllerOptions: { timeouts: { callMs: 5_000, placeMs: 3_000, describeMs: 2_000 } } });
    const [first, second] = nodesOf(fx);
    await paired(fx);
    fx.faults.holdNextPlaceAnswer(first.addr);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    expect(
      r.attempts.map((a) => a.outcome),
      r.explain,
    ).toEqual(["indeterminate", "placed"]);
    expect(r.attempts[0]?.reason).toContain("reconciled: unloaded 1 instance");
    expect(r.placed?.node_id).toBe(second.id);
    expect(await instanceCount(fx)).toBe(1);
  });

  it("a node restarted between describe and place answers stale_boot; one re-describe and resend places it", async () => {
    let restarted = false;
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterAttemptBegun: async (_d, nodeId) => {
            const node = fx?.nodes.find((n) => n.id === nodeId);
            if (!node || restarted) return;
            restarted = true;
            await node.daemon.close();
            node.daemon = await NodeDaemon.start({
              dataDir: node.dataDir,
              listen: "127.0.0.1:0",
              version: "test",
              allowRootAgents: true,
              pollMs: 50,
            });
          },
        },
      },
    });
    const [first] = nodesOf(fx);
    await paired(fx);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    expect(restarted).toBe(true);
    expect(
      r.attempts.map((a) => a.outcome),
      r.explain,
    ).toEqual(["placed"]);
    expect(r.placed?.node_id).toBe(first.id);
    expect(
      nodeEvents(first, "workload.refuse").some((e) => e.payload.code === "stale_boot"),
      "the first send was refused stale_boot",
    ).toBe(true);
    expect(await instanceCount(fx)).toBe(1);
  });

  it("a pinned place whose only node cannot be reached promises no next candidate (issue 36)", async () => {
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterAttemptBegun: (_d, nodeId) => {
            const node = fx?.nodes.find((n) => n.id === nodeId);
            if (node?.name === "first") fx?.faults.cut(node.addr);
          },
        },
      },
    });
    const [first] = nodesOf(fx);
    await paired(fx);
    const r = await fx.controller.place({ package: fx.pkgDir, pin: first.id });
    expect(
      r.attempts.map((a) => [a.outcome, a.next]),
      r.explain,
    ).toEqual([["unreachable", "no candidate left"]]);
    expect(r.explain).not.toContain("trying the next candidate");
    expect(r.placed).toBeNull();
  });

  it("a target that cannot be reached when the place is sent is recorded unreachable, and the next candidate places", async () => {
    fx = await seedFixture({
      controllerOptions: {
        hooks: {
          afterAttemptBegun: (_d, nodeId) => {
            const node = fx?.nodes.find((n) => n.id === nodeId);
            if (node?.name === "first") fx?.faults.cut(node.addr);
          },
        },
      },
    });
    const [first, second] = nodesOf(fx);
    await paired(fx);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    expect(
      r.attempts.map((a) => [a.outcome, a.next]),
      r.explain,
    ).toEqual([
      ["unreachable", "trying the next candidate"],
      ["placed", null],
    ]);
    expect(r.placed?.node_id).toBe(second.id);
    expect(
      (await controllerEvents(fx.controller, "workload.refuse")).some(
        (e) => e.outcome === "unreachable" && e.next === "trying the next candidate",
      ),
    ).toBe(true);
    expect(await instanceCount(fx)).toBe(1);
  });

  it("facts claiming a tier are rejected whole, so the engine rejects the node under facts_expired", async () => {
    fx = await seedFixture();
    const [first] = nodesOf(fx);
    await first.daemon.close();
    first.daemon = await NodeDaemon.start({
      dataDir: first.dataDir,
      listen: "127.0.0.1:0",
      version: "test",
      allowRootAgents: true,
      labels: { "berth.io/tier": "pinned" },
    });
    await paired(fx);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    const report = r.decision.candidates.find((c) => c.node_id === first.id);
    expect(report?.eligible).toBe(false);
    expect(report?.rejections.map((x) => x.constraint)).toContain("facts_expired");
    expect(r.placed?.node_id).not.toBe(first.id);
  });

  it("two concurrent places of one name dispatch exactly once; the other fails because the name is taken", async () => {
    fx = await seedFixture();
    await paired(fx);
    const results = await Promise.allSettled([
      fx.controller.place({ package: fx.pkgDir }),
      fx.controller.place({ package: fx.pkgDir }),
    ]);
    expect(results.filter((x) => x.status === "fulfilled")).toHaveLength(1);
    const failed = results.find((x) => x.status === "rejected");
    expect(failed?.status === "rejected" ? String(failed.reason) : "").toMatch(
      /name probe is (already placed|held by a decision in flight by pid)/,
    );
    expect(await instanceCount(fx)).toBe(1);
  });
});

/**
 * The seed's three scenarios with real processes (spec/mesh.md §18.2): two `berth node serve` daemons on loopback, the
 * controller over TCP, the preferred node behind a TCP proxy the test controls. Assertions go through signed
 * `status` calls, each node's own chain, and the OS (process groups, pids and start markers).
 * Invariants: I1, I2, I3.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JsonObject } from "../../src/core/crypto/canonical.js";
import { processesWithEnv, waitFor } from "../mesh/harness.js";
import { NO_START_PERMIT, TEST_PERMIT } from "./support/package.js";
import { cleanupProcesses, type ProcessFixture, processFixture, startMarker } from "./support/processes.js";

afterEach(cleanupProcesses);

async function pairedTargets(fx: ProcessFixture): Promise<void> {
  for (const addr of [fx.proxy.address, fx.second.address]) {
    const added = await fx.controller.addTarget(addr, "paired");
    expect(added.ok, JSON.stringify(added)).toBe(true);
  }
}

const order = (fx: ProcessFixture) => ({
  package: fx.pkgDir,
  config: { mode: "service" as const },
  start: true,
  prefer: [fx.first.nodeId],
});

async function chainsVerify(fx: ProcessFixture): Promise<void> {
  expect((await fx.controller.store.chain.verifyStored()).ok).toBe(true);
}

describe("seed scenarios with real node daemons and a TCP proxy (I1, I2, I3)", () => {
  it("a start failure after load is unloaded on the refusing daemon and the next candidate places", async () => {
    const fx = await processFixture({ permits: [[NO_START_PERMIT], [TEST_PERMIT]] });
    await pairedTargets(fx);

    const r = await fx.controller.place(order(fx));
    expect(r.attempts, r.explain).toHaveLength(2);
    expect([r.attempts[0]?.outcome, r.attempts[0]?.code]).toEqual(["refused", "governance"]);
    expect(r.attempts[0]?.reason).toContain("start failed");
    expect(r.attempts[0]?.reason).toContain("unloaded");
    expect(await fx.instances(fx.first)).toHaveLength(0);
    expect(
      fx.first.events({ source: "runtime", kind: "workload.unload" }).length,
      "the rollback unload is in the daemon's chain",
    ).toBeGreaterThan(0);
    expect(r.placed?.node_id).toBe(fx.second.nodeId);
    expect(await fx.instances(fx.second)).toHaveLength(1);

    const unload = await fx.controller.instance("unload", r.placed!.instance_id);
    expect(unload.kind, JSON.stringify(unload)).toBe("ok");
    expect(await fx.instances(fx.second)).toHaveLength(0);
    expect(processesWithEnv(`BERTH_DECISION_ID=${r.decision_id}`), "no process of the instance is alive").toEqual([]);
    await chainsVerify(fx);
  });

  it("a place answer dropped by the proxy is reconciled before the next candidate and exactly one instance exists", async () => {
    const fx = await processFixture();
    await pairedTargets(fx);
    fx.proxy.dropNextPlaceAnswer();

    const r = await fx.controller.place(order(fx));
    expect(fx.proxy.dropped).toBe(1);
    expect(r.attempts, r.explain).toHaveLength(2);
    expect(r.attempts[0]?.outcome).toBe("indeterminate");
    expect(r.attempts[0]?.reason).toContain("reconciled: unloaded 1 instance");
    expect(await fx.instances(fx.first), "the orphan was unloaded").toHaveLength(0);
    expect(
      fx.first
        .events({ source: "runtime", kind: "workload.unload" })
        .some((e) => e.payload.decision_id === r.decision_id),
      "the reconcile unload carried the decision id",
    ).toBe(true);
    expect(r.placed?.node_id).toBe(fx.second.nodeId);
    expect(await fx.instances(fx.second), "exactly one instance").toHaveLength(1);
    // At the OS level exactly one process group runs for this decision: the second node's.
    const pids = processesWithEnv(`BERTH_DECISION_ID=${r.decision_id}`);
    expect(pids.length).toBeGreaterThan(0);
    const placedPid = (await fx.instances(fx.second))[0]?.pid as number;
    expect(
      pids.every((pid) => pid === placedPid || !Number.isNaN(pid)),
      "only the placed instance's processes",
    ).toBe(true);
    expect(
      (await fx.controller.store.events({ kind: "workload.refuse" })).some(
        (e) => e.outcome === "indeterminate" && e.next === "trying the next candidate",
      ),
    ).toBe(true);

    expect((await fx.controller.instance("unload", r.placed!.instance_id)).kind).toBe("ok");
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${r.decision_id}`).length === 0,
      "no process of the decision",
    );
    await chainsVerify(fx);
  });

  it("a place answer lost in a partition stops placement, stays unsettled, and after heal is adopted without a restart and unloaded through the controller", async () => {
    const fx = await processFixture();
    await pairedTargets(fx);
    // The partition starts at the drop.
    fx.proxy.dropNextPlaceAnswer({ thenCut: true });

    const r = await fx.controller.place(order(fx));
    expect(fx.proxy.dropped).toBe(1);
    expect(r.attempts, `no second candidate: ${r.explain}`).toHaveLength(1);
    expect(r.attempts[0]?.outcome).toBe("indeterminate");
    expect(r.placed).toBeNull();
    expect(r.attempts[0]?.reason).toContain("not reconciled");
    expect(await fx.instances(fx.second), "no duplicate placed").toHaveLength(0);
    const held = await fx.instances(fx.first);
    expect(held, "the only instance").toHaveLength(1);
    expect(
      (await fx.controller.store.events({ kind: "workload.refuse" })).some(
        (e) => e.outcome === "indeterminate" && e.next === "stopped: the target may hold the instance",
      ),
    ).toBe(true);
    expect(await fx.controller.unsettled()).toHaveLength(1);
    expect(await fx.controller.settleUnsettled()).toBe(0);
    expect(await fx.controller.placements()).toHaveLength(0);
    const iid = String(held[0]?.instance_id);
    const pid = held[0]?.pid as number;
    const marker = startMarker(pid);
    expect(marker).not.toBeNull();

    await fx.proxy.heal();
    const st = await fx.controller.instance("status", iid);
    expect(st.kind, JSON.stringify(st)).toBe("ok");
    const row = st.kind === "ok" ? (st.result.status as JsonObject) : {};
    expect(row.state).toBe("running");
    // Adopted, never restarted: the same pid and start marker as at spawn.
    expect(row.pid).toBe(pid);
    expect(startMarker(pid)).toBe(marker);
    expect(fx.first.events({ source: "runtime", kind: "workload.start" })).toHaveLength(1);
    expect(await fx.controller.unsettled()).toHaveLength(0);
    const rec = (await fx.controller.placements())[0];
    expect([rec?.node_id, rec?.decision_id]).toEqual([fx.first.nodeId, r.decision_id]);
    expect(
      (await fx.controller.store.events({ kind: "workload.place" })).some(
        (e) => e.phase === "adopted" && e.instance_id === iid,
      ),
    ).toBe(true);

    expect((await fx.controller.instance("unload", iid)).kind).toBe("ok");
    expect(await fx.instances(fx.first)).toHaveLength(0);
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${r.decision_id}`).length === 0,
      "no process of the decision",
    );
    await chainsVerify(fx);
  });
});

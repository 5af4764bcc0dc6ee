/**
 * The keep loop of `berth serve` (issue 16) over real node daemons and real processes, in one process: the
 * in-process connector behind the fault connector, `startTargetWatch` with a short tick. A leased node cut off from
 * the controller longer than its lease stops the instance itself (judged from /proc); once the cut heals, the loop
 * starts it again through the instance verb, chained as the loop's act. A dead node without a lease is held with one
 * chained alert, however many ticks pass; a loop that may not act (not the leader) does and chains nothing.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { NodeDaemon } from "../../src/mesh/node/daemon.js";
import { startTargetWatch, type TargetWatch } from "../../src/serve/mesh/watch.js";
import { processesWithEnv } from "../mesh/harness.js";
import { instancesOn, type SeedFixture, seedFixture, waitFor } from "./support/in-process.js";
import { writeJson } from "./support/package.js";
import { readFileSync } from "node:fs";

vi.setConfig({ testTimeout: 90_000 });

let fx: SeedFixture | null = null;
let watch: TargetWatch | null = null;

afterEach(async () => {
  await watch?.stop();
  watch = null;
  await fx?.close();
  fx = null;
});

const LEASE_MS = 3_000;

/** Restarts a fixture node's daemon with `lease_ms` in its node.json. */
async function withLease(f: SeedFixture, i: number): Promise<void> {
  const n = f.nodes[i]!;
  await n.daemon.close();
  const path = join(n.dataDir, "node.json");
  writeJson(path, { ...JSON.parse(readFileSync(path, "utf8")), lease_ms: LEASE_MS });
  n.daemon = await NodeDaemon.start({
    dataDir: n.dataDir,
    listen: "127.0.0.1:0",
    version: "test",
    allowRootAgents: true,
    pollMs: 50,
  });
}

async function placedOn(f: SeedFixture, i: number): Promise<{ instanceId: string; decisionId: string }> {
  for (const n of f.nodes) expect((await f.controller.addTarget(n.addr, "paired")).ok).toBe(true);
  const r = await f.controller.place({
    package: f.pkgDir,
    config: { mode: "service" },
    start: true,
    pin: f.nodes[i]!.id,
  });
  expect(r.placed, r.explain).not.toBeNull();
  const p = r.placed!;
  // Issue 20: only the store's leader ticks; this controller is the only contender.
  f.controller.lead({ address: null });
  await waitFor(() => f.controller.isLeader(), "the leadership");
  return { instanceId: p.instance_id, decisionId: p.decision_id };
}

describe("the keep loop of berth serve", () => {
  it("a leased node cut off past its lease stops the instance; once healed the loop starts it again, chained as the loop's act", async () => {
    fx = await seedFixture();
    await withLease(fx, 0);
    const node = fx.nodes[0]!;
    const { instanceId, decisionId } = await placedOn(fx, 0);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    watch = startTargetWatch(fx.controller, 500, (e) => {
      throw e;
    });
    // While the tick talks to it the lease holds.
    await new Promise((r) => setTimeout(r, 2 * LEASE_MS));
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    fx.faults.cut(node.addr);
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length === 0,
      "the node to stop the instance for its lease",
      30_000,
    );
    // The group exits on SIGTERM a moment before the daemon commits the stop: read the node's own record.
    const stateOf = async () =>
      (await instancesOn(node, fx!.key, fx!.memory)).find((r) => r.instance_id === instanceId)?.state;
    await waitFor(async () => (await stateOf()) === "lease_stopped", "the node to record lease_stopped", 30_000);
    fx.faults.heal(node.addr);
    await waitFor(
      () => processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length > 0,
      "the loop to start it again",
      30_000,
    );
    const acts = (await fx.controller.store.events({ kind: "workload.lifecycle" })).filter(
      (p) => p.phase === "lifecycle",
    );
    expect(acts).toEqual([
      expect.objectContaining({
        instance_id: instanceId,
        action: "start",
        by: expect.objectContaining({ actor: "reconcile-loop" }),
      }),
    ]);
    expect((await fx.controller.store.chain.verifyStored()).ok).toBe(true);
    // Never two: one running row for the decision.
    expect(
      (await instancesOn(node, fx.key, fx.memory)).filter((r) => r.instance_id === instanceId && r.state === "running"),
    ).toHaveLength(1);
  });

  it("a node without a lease that stays unreachable is held with one chained alert, whatever the number of ticks", async () => {
    fx = await seedFixture({ controllerOptions: { deadAfterMs: 1_000 } });
    const node = fx.nodes[0]!;
    const { instanceId, decisionId } = await placedOn(fx, 0);
    fx.faults.cut(node.addr);
    watch = startTargetWatch(fx.controller, 300, (e) => {
      throw e;
    });
    await waitFor(
      async () => (await fx!.controller.store.events({ kind: "workload.lifecycle" })).some((p) => p.phase === "alert"),
      "the held alert",
      30_000,
    );
    await new Promise((r) => setTimeout(r, 3_000));
    const alerts = (await fx.controller.store.events({ kind: "workload.lifecycle" })).filter(
      (p) => p.phase === "alert",
    );
    expect(alerts).toEqual([expect.objectContaining({ instance_id: instanceId, reason: "held_no_lease" })]);
    // Nothing was stopped: the copy still runs on its unreachable node.
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
    expect((await fx.controller.placements()).map((p) => p.instance_id)).toEqual([instanceId]);
  });

  it("a loop that may not act (not the leader) chains nothing and starts nothing", async () => {
    fx = await seedFixture({ controllerOptions: { deadAfterMs: 1_000 } });
    const { decisionId } = await placedOn(fx, 0);
    fx.faults.cut(fx.nodes[0]!.addr);
    let passes = 0;
    watch = startTargetWatch(
      fx.controller,
      300,
      (e) => {
        throw e;
      },
      { shouldAct: () => false, onPass: () => void passes++ },
    );
    await waitFor(() => passes >= 8, "eight passes", 30_000);
    expect(await fx.controller.store.events({ kind: "workload.lifecycle" })).toEqual([]);
    expect(processesWithEnv(`BERTH_DECISION_ID=${decisionId}`).length).toBeGreaterThan(0);
  });
});

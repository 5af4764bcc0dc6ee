/**
 * Issue 33 item 1, a stop is final, with real `berth node serve` daemons and real agent processes, judged from /proc
 * (every live process carrying the agent's BERTH_NAME) and the controller's chain: an agent a person stopped
 * (`berth agent stop` is the controller's instance stop of the agent's placement) is never started, moved or placed
 * again by the keep loop, whatever becomes of its node:
 *
 * - its leased node's daemon is killed with kill -9 and stays dead past the lease: nothing reschedules it;
 * - its node is drained: its stopped copy is unloaded and it is placed nowhere;
 * - its node is forgotten: nothing places it again, and when the node answers its stopped copy is unloaded.
 *
 * Each case waits on the loop's own passes (two full passes after the moment the loop would have moved it on main),
 * never on a fixed sleep; and `berth agent start`'s path (a placement of the name) is what ends the stop.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { leaseWaitMs } from "../../src/core/mesh/lease.js";
import type { MeshController } from "../../src/mesh/controller/controller.js";
import { drainNode, forgetNode } from "../../src/mesh/controller/node-admin.js";
import { startTargetWatch, type TargetWatch } from "../../src/serve/mesh/watch.js";
import { waitFor } from "../mesh/harness.js";
import { liveAgents } from "../support/live-agents.js";
import { cleanupProcesses, type ProcessFixture, processFixture } from "./support/processes.js";

vi.setConfig({ testTimeout: 120_000 });

const LONG_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 600\n";
const LEASE_MS = 3_000;
// A name of this run only: /proc is the whole machine's.
const NAME = `stopped${process.pid}`;

let watch: TargetWatch | null = null;

afterEach(async () => {
  await watch?.stop();
  watch = null;
  await cleanupProcesses();
});

const liveInstances = (): string[] => [
  ...new Set(
    liveAgents(NAME)
      .map((a) => a.instance)
      .filter((i): i is string => Boolean(i)),
  ),
];

/** The loop, with its passes counted: `passes()` is how many passes have ended so far. */
function startLoop(ctl: MeshController): { passes: () => number } {
  let passes = 0;
  watch = startTargetWatch(
    ctl,
    300,
    (e) => {
      throw e;
    },
    { onPass: () => passes++ },
  );
  return { passes: () => passes };
}

/** Two whole passes of the loop that began after now. */
async function twoPassesFromNow(loop: { passes: () => number }, what: string): Promise<void> {
  const from = loop.passes();
  // The pass in flight may have read the world before now: it does not count.
  await waitFor(() => loop.passes() >= from + 3, `two keep passes ${what}`, 60_000);
}

async function lead(ctl: MeshController): Promise<void> {
  ctl.lead({ address: null });
  await waitFor(() => ctl.isLeader(), "the leadership");
}

/** Places the agent (restart always, so on main the loop would move it) on `on`, and stops it as a person would. */
async function placeAndStop(
  fx: ProcessFixture,
  ctl: MeshController,
  on: "first" | "second",
  o: { direct?: boolean } = {},
): Promise<string> {
  expect((await ctl.addTarget(o.direct ? fx.first.address : fx.proxy.address, "paired")).ok).toBe(true);
  expect((await ctl.addTarget(fx.second.address, "paired")).ok).toBe(true);
  const r = await ctl.place({
    package: fx.pkgDir,
    name: NAME,
    config: { mode: "service" },
    restart: "always",
    prefer: [fx[on].nodeId],
  });
  expect(r.placed?.node_id, r.explain).toBe(fx[on].nodeId);
  const instanceId = r.placed!.instance_id;
  await waitFor(() => liveInstances().includes(instanceId), "the agent running");
  const stop = await ctl.instance("stop", instanceId, { operator: { user: "test", via: "berth agent stop" } });
  expect(stop.kind, JSON.stringify(stop)).toBe("ok");
  await waitFor(() => liveInstances().length === 0, "the agent stopped");
  // The stop is on the record: chained with the request, before anything was sent.
  expect(await ctl.store.events({ kind: "workload.stop", phase: "request" })).toContainEqual(
    expect.objectContaining({ instance_id: instanceId, name: NAME, final: true }),
  );
  return instanceId;
}

const placements = async (ctl: MeshController) =>
  (await ctl.store.events({ kind: "workload.place", phase: "decision" })).filter((e) => e.name === NAME);

describe("a stop is final: the keep loop never runs a stopped agent again (real daemons, /proc)", () => {
  it("a stopped agent whose leased node is killed with kill -9 for longer than its lease is not rescheduled", async () => {
    const fx = await processFixture({ config: [undefined, { lease_ms: LEASE_MS }], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    await placeAndStop(fx, ctl, "second");
    const decisions = (await placements(ctl)).length;
    await lead(ctl);
    const loop = startLoop(ctl);
    await fx.second.kill9();
    const killedAt = Date.now();
    // On main the loop reschedules once the lease is certainly over: wait until then, then two more passes.
    await waitFor(() => Date.now() >= killedAt + leaseWaitMs(LEASE_MS), "the lease certainly over", 60_000);
    await twoPassesFromNow(loop, "after the lease was certainly over");
    expect(liveInstances(), "a process of the stopped agent").toEqual([]);
    expect(await ctl.store.events({ kind: "workload.migrate" })).toEqual([]);
    expect((await placements(ctl)).length).toBe(decisions);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a stopped agent on a drained node is unloaded there and placed nowhere", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const instanceId = await placeAndStop(fx, ctl, "first", { direct: true });
    const decisions = (await placements(ctl)).length;
    await lead(ctl);
    const loop = startLoop(ctl);
    const r = await drainNode(
      await ctl.nodeAdmin(),
      fx.first.nodeId,
      "kernel upgrade",
      { user: "test", via: "berth node drain" },
      (ms) => new Promise((res) => setTimeout(res, ms)),
    );
    expect("error" in r ? r.error : null).toBeNull();
    if ("error" in r) return;
    expect(r.steps).toEqual([
      expect.objectContaining({ instance_id: instanceId, outcome: "stopped_by_operator", old_copy: "unloaded" }),
    ]);
    await twoPassesFromNow(loop, "after the drain");
    expect(liveInstances(), "a process of the stopped agent").toEqual([]);
    expect((await fx.instances(fx.first)).filter((row) => row.name === NAME)).toEqual([]);
    expect((await fx.instances(fx.second)).filter((row) => row.name === NAME)).toEqual([]);
    expect((await placements(ctl)).length).toBe(decisions);
    expect(await ctl.placements()).toEqual([]);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a stopped agent on a forgotten node is placed nowhere, and its stopped copy is unloaded when the node answers again", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const instanceId = await placeAndStop(fx, ctl, "first");
    const decisions = (await placements(ctl)).length;
    await lead(ctl);
    await fx.proxy.cut();
    const r = await forgetNode(await ctl.nodeAdmin(), fx.first.nodeId, "the Pi lost its SD card", {
      user: "test",
      via: "berth node forget",
    });
    expect(r).toEqual({ node: fx.first.nodeId, released: [{ instance_id: instanceId, name: NAME }], decisions: [] });
    const loop = startLoop(ctl);
    await twoPassesFromNow(loop, "after the forget");
    expect(liveInstances(), "a process of the stopped agent").toEqual([]);
    expect((await placements(ctl)).length).toBe(decisions);
    // The node answers again: its stopped copy is unloaded; nothing starts anywhere.
    await fx.proxy.heal();
    await waitFor(async () => (await ctl.moves.moved()).length === 0, "the stopped copy's record to end", 30_000);
    await twoPassesFromNow(loop, "after the node answered again");
    expect((await fx.instances(fx.first)).filter((row) => row.name === NAME)).toEqual([]);
    expect(liveInstances(), "a process of the stopped agent").toEqual([]);
    expect((await placements(ctl)).length).toBe(decisions);
    // A deploy (here the same order placed again, as `berth agent start` does through the deploy) ends the stop.
    const again = await ctl.place({ package: fx.pkgDir, name: NAME, config: { mode: "service" }, restart: "always" });
    expect(again.placed, again.explain).not.toBeNull();
    expect(await ctl.store.stoppedNames()).toEqual(new Set());
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });
});

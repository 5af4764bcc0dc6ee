/**
 * Moving agents without ever two copies (issue 16), with real `berth node serve` daemons and real agent processes,
 * judged from /proc (every live process carrying the agent's BERTH_NAME, sampled every ~100 ms), the controller's
 * store and its chain:
 *
 * - a leased node killed for good (kill -9 of its daemon; its instances stop themselves): the agent runs on the other
 *   node once the lease has certainly run out (last stamp + lease_ms + 11 s), never two copies; when the node comes
 *   back, its stopped copy is unloaded, fenced;
 * - a node without a lease killed for good: its agent is held, alerted once, never placed elsewhere;
 * - `berth node forget`: the placement is released at once and placed elsewhere; when the forgotten node answers
 *   again, its copy is stopped and unloaded on the operator's authority;
 * - `berth node drain`: the agent moves off a live node with never two live copies;
 * - an old copy found running on a returned node (a broken lease assumption, simulated by a controller told a shorter
 *   lease than the node keeps) is alerted `duplicate` once and never killed.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { leaseWaitMs } from "../../src/core/mesh/lease.js";
import type { MeshController } from "../../src/mesh/controller/controller.js";
import { NodeClient } from "../../src/mesh/client/node-client.js";
import { drainNode, forgetNode } from "../../src/mesh/controller/node-admin.js";
import { TlsConnector } from "../../src/mesh/transport/tls.js";
import { startTargetWatch, type TargetWatch } from "../../src/serve/mesh/watch.js";
import { waitFor } from "../mesh/harness.js";
import { liveAgents } from "../support/live-agents.js";
import { cleanupProcesses, type ProcessFixture, processFixture } from "./support/processes.js";

vi.setConfig({ testTimeout: 120_000 });

const LONG_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 600\n";
const LEASE_MS = 3_000;
// /proc is the whole machine's: a fixed name would count the copies of another run of this file (a CI beside a
// developer's run, or a copy an earlier run's dead node left) as this run's second copy.
const NAME = `mover${process.pid}`;

let watch: TargetWatch | null = null;
let sampler: Sampler | null = null;

afterEach(async () => {
  sampler?.stop();
  sampler = null;
  await watch?.stop();
  watch = null;
  await cleanupProcesses();
});

interface Copy {
  readonly instance: string;
  readonly node: string;
}

/** The agent's live copies from /proc: distinct instance ids among live (non-zombie) processes with its BERTH_NAME. */
function liveCopies(name: string): Copy[] {
  const copies = new Map<string, Copy>();
  for (const { instance, node } of liveAgents(name)) if (instance && node) copies.set(instance, { instance, node });
  return [...copies.values()];
}

interface Sampler {
  readonly max: number;
  readonly samples: number;
  /** The first sample that saw more than one copy, for the failure message. */
  readonly twice: Copy[] | null;
  stop(): void;
}

function sample(name: string): Sampler {
  let max = 0;
  let samples = 0;
  let twice: Copy[] | null = null;
  const timer = setInterval(() => {
    const c = liveCopies(name);
    samples++;
    if (c.length > max) max = c.length;
    if (c.length > 1 && twice === null) twice = c;
  }, 100);
  return {
    get max() {
      return max;
    },
    get samples() {
      return samples;
    },
    get twice() {
      return twice;
    },
    stop: () => clearInterval(timer),
  };
}

async function lead(ctl: MeshController): Promise<void> {
  ctl.lead({ address: null });
  await waitFor(() => ctl.isLeader(), "the leadership");
}

function startLoop(ctl: MeshController, tickMs = 300): TargetWatch {
  return startTargetWatch(ctl, tickMs, (e) => {
    throw e;
  });
}

/** Adds both nodes (the first through its proxy unless `direct`) and places the agent on `on`, restart always. */
async function placeAgent(
  fx: ProcessFixture,
  ctl: MeshController,
  on: "first" | "second",
  o: { direct?: boolean } = {},
): Promise<{ instanceId: string; decisionId: string }> {
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
  return { instanceId: r.placed!.instance_id, decisionId: r.placed!.decision_id };
}

/**
 * The node's last-sent stamp over every request that may have reached it (watch-stamps.ts, the lease's rule 4), read
 * once the calls in flight when asked have ended. `stamps.of` counts a pending stamp too (the controller's safe
 * reading), but the loop and the tick keep calling the dead node after the move, each call pending for a few ms
 * before it is taken back (nothing was sent): a read that lands in that window sees a stamp issued after the decision
 * it is meant to judge (about one read in fifteen on this machine), which no decision could have waited for.
 */
async function settledLastSent(ctl: MeshController, nodeId: string): Promise<number> {
  const pending = async () =>
    (
      await ctl.store.engine.read((q) =>
        q.all<{ id: string }>("SELECT id FROM mesh_watch_sends WHERE node_id = ? AND settled = 0", [nodeId]),
      )
    ).map((r) => r.id);
  const inFlight = new Set(await pending());
  await waitFor(async () => !(await pending()).some((id) => inFlight.has(id)), "the calls in flight to end");
  const [floor, kept] = await ctl.store.engine.read(
    async (q) =>
      [
        await q.get<{ m: number | string | null }>("SELECT last_sent_ms AS m FROM mesh_watch_nodes WHERE node_id = ?", [
          nodeId,
        ]),
        await q.get<{ m: number | string | null }>(
          "SELECT MAX(issued_at_ms) AS m FROM mesh_watch_sends WHERE node_id = ? AND settled = 1",
          [nodeId],
        ),
      ] as const,
  );
  const stamps = [floor?.m, kept?.m].filter((m) => m != null).map(Number);
  if (stamps.length === 0) throw new Error(`no request to ${nodeId} may have reached it`);
  return Math.max(...stamps);
}

/** The `workload.migrate` events, once the first is chained. */
const chainedMoves = (ctl: MeshController) =>
  waitFor(async () => {
    const e = await ctl.store.events({ kind: "workload.migrate" });
    return e.length > 0 ? e : undefined;
  }, "the move chained");

const lifecycle = async (ctl: MeshController, phase: string) =>
  (await ctl.store.events({ kind: "workload.lifecycle" })).filter((p) => p.phase === phase);

describe("moving agents off a lost or drained node, never two copies (real daemons, /proc)", () => {
  it("a leased node killed for good: its agent runs elsewhere once the lease has certainly run out, never twice; its stopped copy is unloaded when it returns", async () => {
    const fx = await processFixture({ config: [undefined, { lease_ms: LEASE_MS }], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "second");
    await lead(ctl);
    watch = startLoop(ctl);
    sampler = sample(NAME);
    await fx.second.kill9();
    const killedAt = Date.now();
    const moved = await waitFor(
      () => liveCopies(NAME).find((c) => c.node === fx.first.nodeId),
      "the agent running on the other node",
      60_000,
    );
    const movedAfter = Date.now() - killedAt;
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(sampler.max).toBe(1);
    // The argument's floor: the new decision was made no earlier than the last stamp + lease_ms + 11 s.
    const migrate = await chainedMoves(ctl);
    expect(migrate).toEqual([
      expect.objectContaining({
        phase: "rescheduled",
        workload: NAME,
        from_node: fx.second.nodeId,
        from_instance: instanceId,
        to_node: fx.first.nodeId,
        to_instance: moved.instance,
      }),
    ]);
    const decidedAt = (await ctl.store.chain.byHash(String(migrate[0]!.decision_id)))!.ts;
    const lastSent = await settledLastSent(ctl, fx.second.nodeId);
    expect(decidedAt).toBeGreaterThanOrEqual(lastSent + leaseWaitMs(LEASE_MS));
    expect(movedAfter).toBeGreaterThanOrEqual(LEASE_MS);
    expect(await lifecycle(ctl, "lifecycle")).toContainEqual(
      expect.objectContaining({
        instance_id: instanceId,
        action: "reschedule",
        by: expect.objectContaining({ actor: "reconcile-loop" }),
      }),
    );
    expect((await ctl.placements()).map((p) => [p.name, p.node_id])).toEqual([[NAME, fx.first.nodeId]]);
    // The node comes back: its copy (stopped by the lease) is unloaded, fenced; nothing starts it again.
    await fx.second.start();
    await waitFor(async () => (await ctl.moves.moved()).length === 0, "the old copy's record to end", 30_000);
    expect((await fx.instances(fx.second)).filter((r) => r.name === NAME)).toEqual([]);
    expect(await ctl.store.events({ kind: "workload.unload", phase: "outcome" })).toContainEqual(
      expect.objectContaining({ instance_id: instanceId, result: "orphan_unloaded" }),
    );
    await new Promise((r) => setTimeout(r, 1_500));
    sampler.stop();
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(liveCopies(NAME)).toEqual([moved]);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a leased node killed for good between two ticks: the pass its lease's end wakes moves the agent then, with no tick in between (issue 35)", async () => {
    const fx = await processFixture({ config: [undefined, { lease_ms: LEASE_MS }], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "second");
    await lead(ctl);
    // Ten minutes between ticks: after the first, only a pass asked for here or woken by a due instant runs.
    const passes: number[] = [];
    watch = startTargetWatch(
      ctl,
      600_000,
      (e) => {
        throw e;
      },
      { onPass: () => passes.push(Date.now()) },
    );
    await waitFor(() => passes.length >= 1, "the first pass");
    sampler = sample(NAME);
    await fx.second.kill9();
    // One pass finds the node silent; from then on nobody asks for another.
    await watch.pass();
    const moved = await waitFor(
      () => liveCopies(NAME).find((c) => c.node === fx.first.nodeId),
      "the agent running on the other node, moved by the passes the due instants woke",
      60_000,
    );
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(sampler.max).toBe(1);
    const migrate = await chainedMoves(ctl);
    expect(migrate).toEqual([
      expect.objectContaining({ phase: "rescheduled", from_instance: instanceId, to_instance: moved.instance }),
    ]);
    // Never before the lease rule allowed it.
    const decidedAt = (await ctl.store.chain.byHash(String(migrate[0]!.decision_id)))!.ts;
    expect(decidedAt).toBeGreaterThanOrEqual((await settledLastSent(ctl, fx.second.nodeId)) + leaseWaitMs(LEASE_MS));
    // The first pass, the one asked for, then the woken ones (the node judged dead, its lease over): no tick.
    expect(passes.length).toBeGreaterThanOrEqual(3);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a node without a lease killed for good: its agent is held with one alert and never placed elsewhere", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "second");
    await lead(ctl);
    watch = startLoop(ctl);
    sampler = sample(NAME);
    await fx.second.kill9();
    await waitFor(async () => (await lifecycle(ctl, "alert")).length > 0, "the held alert", 30_000);
    await new Promise((r) => setTimeout(r, 3_000));
    expect(await lifecycle(ctl, "alert")).toEqual([
      expect.objectContaining({ instance_id: instanceId, reason: "held_no_lease" }),
    ]);
    // Its copy still runs on the dead node's host (nothing stops it), and nothing runs elsewhere.
    expect(liveCopies(NAME)).toEqual([{ instance: instanceId, node: fx.second.nodeId }]);
    expect(sampler.max).toBe(1);
    expect(await ctl.store.events({ kind: "workload.migrate" })).toEqual([]);
  });

  it("forget releases a node's placement at once and the loop places it elsewhere; when the node answers again its copy is stopped and unloaded on the operator's authority", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "first");
    await lead(ctl);
    await fx.proxy.cut();
    const operator = { user: "test", via: "berth node forget" };
    const r = await forgetNode(
      await ctl.nodeAdmin(),
      fx.first.nodeId,
      "the Pi in the kitchen lost its SD card",
      operator,
    );
    expect(r).toEqual({ node: fx.first.nodeId, released: [{ instance_id: instanceId, name: NAME }], decisions: [] });
    // Released at once: no placement holds the name.
    expect(await ctl.placements()).toEqual([]);
    expect(await ctl.store.events({ kind: "node.forget" })).toEqual([
      expect.objectContaining({
        node: fx.first.nodeId,
        reason: "the Pi in the kitchen lost its SD card",
        operator,
        instances: [instanceId],
      }),
    ]);
    watch = startLoop(ctl);
    const placed = await waitFor(
      () => liveCopies(NAME).find((c) => c.node === fx.second.nodeId),
      "the agent placed again on the other node",
      30_000,
    );
    await waitFor(
      async () =>
        (await ctl.store.events({ kind: "workload.migrate" })).some(
          (e) => e.phase === "forgotten" && e.from_instance === instanceId && e.to_instance === placed.instance,
        ),
      "the move chained",
    );
    // The forgotten node answers again with its key: its copy is stopped and unloaded, recorded as the operator's.
    await fx.proxy.heal();
    await waitFor(
      () => !liveCopies(NAME).some((c) => c.node === fx.first.nodeId),
      "the forgotten node's copy stopped",
      30_000,
    );
    await waitFor(async () => (await ctl.moves.moved()).length === 0, "the forgotten copy unloaded", 30_000);
    expect(await ctl.store.events({ kind: "workload.stop", phase: "request" })).toContainEqual(
      expect.objectContaining({ instance_id: instanceId, orphan: true, authority: "operator", moved_by: "forget" }),
    );
    expect((await fx.instances(fx.first)).filter((row) => row.name === NAME)).toEqual([]);
    expect(liveCopies(NAME)).toEqual([placed]);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("drain moves the agent off a live node with never two live copies, and leaves the node cordoned", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "first", { direct: true });
    await lead(ctl);
    watch = startLoop(ctl);
    sampler = sample(NAME);
    const operator = { user: "test", via: "berth node drain" };
    const r = await drainNode(
      await ctl.nodeAdmin(),
      fx.first.nodeId,
      "kernel upgrade",
      operator,
      (ms) => new Promise((res) => setTimeout(res, ms)),
    );
    expect("error" in r ? r.error : null).toBeNull();
    if ("error" in r) return;
    expect(r.steps).toEqual([
      expect.objectContaining({
        instance_id: instanceId,
        outcome: "moved",
        to_node: fx.second.nodeId,
        old_copy: "unloaded",
      }),
    ]);
    await new Promise((res) => setTimeout(res, 1_000));
    sampler.stop();
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(sampler.max).toBe(1);
    expect(sampler.samples).toBeGreaterThan(5);
    expect(liveCopies(NAME).map((c) => c.node)).toEqual([fx.second.nodeId]);
    expect((await fx.instances(fx.first)).filter((row) => row.name === NAME)).toEqual([]);
    // Cordoned: a new placement preferring it lands elsewhere, and the explain says why.
    const again = await ctl.place({
      package: fx.pkgDir,
      name: "other",
      config: { mode: "service" },
      prefer: [fx.first.nodeId],
      dry_run: true,
    });
    expect(again.explain).toContain("cordoned: the operator cordoned this node");
    expect(again.decision.placement?.node_id).toBe(fx.second.nodeId);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });

  it("an instance its reachable node no longer lists is lost: placed again (its node allowed), chained replaced_after_loss", async () => {
    const fx = await processFixture({ script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId, decisionId } = await placeAgent(fx, ctl, "first", { direct: true });
    await lead(ctl);
    // Someone else with the controller's key unloads it on the node, behind the store's back.
    const other = new NodeClient({
      key: fx.key,
      connector: new TlsConnector({ identity: fx.key, connectTimeoutMs: 2_000 }),
      timeoutMs: 5_000,
      authority: () => ctl.authority.current(),
    });
    const unloaded = await other.call(
      fx.first.target(),
      "unload",
      { instance_id: instanceId },
      { decisionId: "f".repeat(64) },
    );
    expect(unloaded.kind, JSON.stringify(unloaded)).toBe("ok");
    expect(liveCopies(NAME)).toEqual([]);
    watch = startLoop(ctl);
    sampler = sample(NAME);
    const again = await waitFor(() => liveCopies(NAME)[0], "the lost agent placed again", 30_000);
    await waitFor(
      async () =>
        (await ctl.store.events({ kind: "workload.migrate" })).some(
          (e) =>
            e.phase === "replaced_after_loss" && e.from_instance === instanceId && e.to_instance === again.instance,
        ),
      "the replacement chained",
    );
    await waitFor(
      async () => (await ctl.moves.moved()).length === 0,
      "the lost record to end (its node lists nothing)",
      30_000,
    );
    expect((await ctl.placements()).map((p) => p.name)).toEqual([NAME]);
    expect((await ctl.placements())[0]?.decision_id).not.toBe(decisionId);
    sampler.stop();
    expect(sampler.max).toBe(1);
  });

  it("an old copy found running on a returned node is alerted duplicate once and never killed by the loop", async () => {
    // The node keeps a long lease; the controller is made to believe a short one (a broken assumption A1–A5).
    const fx = await processFixture({ config: [{ lease_ms: 600_000 }, undefined], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    const { instanceId } = await placeAgent(fx, ctl, "first");
    await lead(ctl);
    await fx.proxy.cut();
    await ctl.store.engine.transaction((tx) =>
      tx.run("UPDATE mesh_watch_nodes SET lease_ms = 1000 WHERE node_id = ?", [fx.first.nodeId]),
    );
    watch = startLoop(ctl);
    await waitFor(
      () => liveCopies(NAME).some((c) => c.node === fx.second.nodeId),
      "the (wrongly) rescheduled copy",
      40_000,
    );
    await fx.proxy.heal();
    await waitFor(
      async () => (await lifecycle(ctl, "alert")).some((a) => a.reason === "duplicate"),
      "the duplicate alert",
      30_000,
    );
    await new Promise((res) => setTimeout(res, 3_000));
    expect((await lifecycle(ctl, "alert")).filter((a) => a.reason === "duplicate")).toEqual([
      expect.objectContaining({ instance_id: instanceId, node: fx.first.nodeId }),
    ]);
    // Never killed: the old copy still runs, and nothing stop/unload was sent for it.
    expect(
      liveCopies(NAME)
        .map((c) => c.node)
        .sort(),
    ).toEqual([fx.first.nodeId, fx.second.nodeId].sort());
    expect(
      (await ctl.store.events({ kind: "workload.stop", phase: "request" })).filter((p) => p.instance_id === instanceId),
    ).toEqual([]);
    expect(
      (await ctl.store.events({ kind: "workload.unload", phase: "request" })).filter(
        (p) => p.instance_id === instanceId,
      ),
    ).toEqual([]);
  });
});

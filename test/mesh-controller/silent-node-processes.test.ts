/**
 * Issue 37 (F5) with real daemons and real agent processes: a node that completes TCP and TLS but never answers (a
 * TLS-terminating middlebox in front of it: the frame-reading proxy, which holds the node's key, takes every request
 * and delivers none until released) is handled like an unreachable one:
 *
 * - the first contact that times out records it unreachable (`suspect`), and the liveness alert says so; then `dead`
 *   (a short dead_after), alerted too;
 * - half a lease after it was first suspected, no request that could renew its lease leaves any more (its stamps are
 *   refused; it is asked only with probes that expired before they left: core/mesh/silent-node.ts), so the last
 *   stamp stops moving; its node stops the copy when the lease lapses, and once the lease has certainly run out
 *   (last stamp + lease_ms + 11 s) the keep loop moves the agent to the other node — never two copies;
 * - answering again, it is alive again (said too), its stopped copy is unloaded, and the agent runs once, elsewhere.
 *
 * Twice: with the node's daemon running behind the middlebox (it stops its copy itself), and with the daemon paused
 * by SIGSTOP as well (a paused node behind a middlebox: the copy is stopped by the watchdog in its own process group,
 * which reads the deadline file the daemon last wrote; docs/concepts.md assumption A3).
 *
 * Judged from outside: /proc (every live process carrying the agent's BERTH_NAME, sampled every ~100 ms), the store
 * and its chain, the node's instance rows through a signed status straight to the daemon.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { leaseWaitMs } from "../../src/core/mesh/lease.js";
import { type LeaseKeeper, startLeaseKeeper } from "../../src/serve/mesh/lease-keeper.js";
import { type LivenessChange, startLivenessAlerts } from "../../src/serve/mesh/liveness-alerts.js";
import { startTargetWatch, type TargetWatch } from "../../src/serve/mesh/watch.js";
import { waitFor } from "../mesh/harness.js";
import { liveAgents } from "../support/live-agents.js";
import { cleanupProcesses, processFixture } from "./support/processes.js";

vi.setConfig({ testTimeout: 240_000 });

const LONG_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 600\n";
const LEASE_MS = 3_000;

let watch: TargetWatch | null = null;
let keeper: LeaseKeeper | null = null;
const stops: Array<() => void> = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
  await keeper?.stop();
  keeper = null;
  await watch?.stop();
  watch = null;
  await cleanupProcesses();
});

/** The agent's live copies from /proc: distinct instance ids among live processes with its BERTH_NAME. */
function liveCopies(name: string): Array<{ instance: string; node: string }> {
  const copies = new Map<string, { instance: string; node: string }>();
  for (const { instance, node } of liveAgents(name)) if (instance && node) copies.set(instance, { instance, node });
  return [...copies.values()];
}

/** Samples /proc every ~100 ms; `twice` is the first sample that saw two copies at once. */
function sample(name: string): { readonly twice: unknown; stop(): void } {
  let twice: unknown = null;
  const timer = setInterval(() => {
    const c = liveCopies(name);
    if (c.length > 1 && twice === null) twice = c;
  }, 100);
  stops.push(() => clearInterval(timer));
  return {
    get twice() {
      return twice;
    },
    stop: () => clearInterval(timer),
  };
}

describe.each([
  { paused: false, how: "its daemon running behind the middlebox" },
  { paused: true, how: "its daemon paused (SIGSTOP) behind the middlebox" },
])("a leased node that completes TCP and TLS but never answers, $how (issue 37, F5)", ({ paused }) => {
  it("is suspect, then dead, each alerted; half a lease on, nothing that could renew its lease is sent, and once the lease has certainly run out its agent runs on the other node, never twice; answering again, its stopped copy is unloaded", async () => {
    const name = `silent${paused ? "p" : "r"}${process.pid}`;
    const fx = await processFixture({ config: [{ lease_ms: LEASE_MS }, undefined], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    expect((await ctl.addTarget(fx.proxy.address, "paired")).ok).toBe(true);
    expect((await ctl.addTarget(fx.second.address, "paired")).ok).toBe(true);
    const placed = await ctl.place({
      package: fx.pkgDir,
      name,
      config: { mode: "service" },
      restart: "always",
      prefer: [fx.first.nodeId],
    });
    expect(placed.placed?.node_id, placed.explain).toBe(fx.first.nodeId);
    const instanceId = placed.placed?.instance_id as string;
    ctl.lead({ address: null });
    await waitFor(() => ctl.isLeader(), "the leadership");
    const changes: LivenessChange[] = [];
    const alerts = startLivenessAlerts(() => ctl.knownTargets(), { everyMs: 100, onChange: (c) => changes.push(c) });
    stops.push(() => alerts.stop());
    // What `berth serve` runs: the lease keeper (every quarter of the lease) and the tick with its keep loop.
    keeper = startLeaseKeeper(ctl, {
      tickMs: 300,
      onError: (e) => {
        throw e;
      },
    });
    watch = startTargetWatch(ctl, 300, (e) => {
      throw e;
    });
    await waitFor(
      async () =>
        (await ctl.targets()).find((t) => t.node_id === fx.first.nodeId)?.liveness === "alive" ? true : undefined,
      "the first node alive",
    );
    const sampler = sample(name);

    // The node goes silent: connections and handshakes complete, requests are taken, nothing is answered.
    const hold = fx.proxy.holdAllRequests();
    stops.push(() => hold.release());
    const daemon = fx.first.proc;
    if (paused) {
      daemon?.kill("SIGSTOP");
      stops.push(() => daemon?.kill("SIGCONT"));
    }
    const suspect = await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "suspect"),
      "the silent node alerted suspect",
      30_000,
    );
    expect(suspect.unreachable_since_ms).not.toBeNull();
    await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "dead"),
      "the silent node alerted dead",
      30_000,
    );

    // Its lease runs out on the node (nothing renews it any more) and the copy stops there; once the lease has
    // certainly run out the loop moves the agent. /proc never shows two copies at once.
    const moved = await waitFor(
      () => liveCopies(name).find((c) => c.node === fx.second.nodeId),
      "the agent running on the other node",
      120_000,
    );
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(hold.held(), "requests were taken (the handshake completed) and never answered").toBeGreaterThan(0);
    // Chained once the new placement has answered (mover.ts), so just after the copy may be seen running.
    const migrate = await waitFor(async () => {
      const e = await ctl.store.events({ kind: "workload.migrate" });
      return e.length > 0 ? e : undefined;
    }, "the move chained");
    expect(migrate).toEqual([
      expect.objectContaining({
        phase: "rescheduled",
        workload: name,
        from_node: fx.first.nodeId,
        from_instance: instanceId,
        to_node: fx.second.nodeId,
        to_instance: moved.instance,
      }),
    ]);
    // Rule 5: the move was decided no earlier than the last request stamped for the silent node + lease_ms + 11 s.
    const lastSent = (await ctl.stamps.of(fx.first.nodeId)).last_sent_ms as number;
    const decidedAt = (await ctl.store.chain.byHash(String(migrate[0]?.decision_id)))?.ts as number;
    expect(decidedAt).toBeGreaterThanOrEqual(lastSent + leaseWaitMs(LEASE_MS));
    expect((await ctl.placements()).map((p) => [p.name, p.node_id])).toEqual([[name, fx.second.nodeId]]);

    // It answers again: alive, said so; its copy (stopped by the lease) is unloaded; the agent runs once, elsewhere.
    if (paused) daemon?.kill("SIGCONT");
    hold.release();
    await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "alive"),
      "the node alerted alive again",
      60_000,
    );
    await waitFor(async () => (await ctl.moves.moved()).length === 0, "the old copy's record to end", 60_000);
    expect((await fx.instances(fx.first)).filter((r) => r.name === name)).toEqual([]);
    expect(await ctl.store.events({ kind: "workload.unload", phase: "outcome" })).toContainEqual(
      expect.objectContaining({ instance_id: instanceId, result: "orphan_unloaded" }),
    );
    sampler.stop();
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(liveCopies(name)).toEqual([moved]);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });
});

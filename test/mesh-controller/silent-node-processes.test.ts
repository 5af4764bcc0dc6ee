/**
 * Issue 37 (F5) with real daemons and real agent processes: a node that completes TCP and TLS but never answers (a
 * TLS-terminating middlebox in front of a paused node: the frame-reading proxy, which holds the node's key, takes
 * every request and delivers none until released) is handled like an unreachable one:
 *
 * - the first contact that times out records it unreachable (`suspect`), and the liveness alert says so;
 * - then `dead` (a short dead_after), alerted too; its leased agent is held where it was: its node stops the copy when
 *   the lease lapses, and the controller, whose every request may still arrive (and so renew the lease), neither
 *   moves it nor starts another — never two copies;
 * - answering again, it is alive again (said too), and the loop starts the copy its lease stopped, on its node.
 *
 * Judged from outside: /proc (every live process carrying the agent's BERTH_NAME, sampled every ~100 ms), the store
 * and its chain, the node's instance rows through a signed status straight to the daemon.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { type LivenessChange, startLivenessAlerts } from "../../src/serve/mesh/liveness-alerts.js";
import { startTargetWatch, type TargetWatch } from "../../src/serve/mesh/watch.js";
import { waitFor } from "../mesh/harness.js";
import { liveAgents } from "../support/live-agents.js";
import { cleanupProcesses, processFixture } from "./support/processes.js";

vi.setConfig({ testTimeout: 120_000 });

const LONG_SCRIPT = "#!/bin/sh\necho placed-ok\nexec sleep 600\n";
const LEASE_MS = 3_000;
const NAME = `silent${process.pid}`;

let watch: TargetWatch | null = null;
const stops: Array<() => void> = [];

afterEach(async () => {
  for (const stop of stops.splice(0)) stop();
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

describe("a node that completes TCP and TLS but never answers (issue 37, F5)", () => {
  it("is suspect after the contact that timed out, then dead, each alerted; its leased agent is held, never twice; answering again it is alive and the agent runs there again", async () => {
    const fx = await processFixture({ config: [{ lease_ms: LEASE_MS }, undefined], script: LONG_SCRIPT });
    const ctl = await fx.reopen({ deadAfterMs: 1_000 });
    expect((await ctl.addTarget(fx.proxy.address, "paired")).ok).toBe(true);
    expect((await ctl.addTarget(fx.second.address, "paired")).ok).toBe(true);
    const placed = await ctl.place({
      package: fx.pkgDir,
      name: NAME,
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
    watch = startTargetWatch(ctl, 300, (e) => {
      throw e;
    });
    await waitFor(
      async () =>
        (await ctl.targets()).find((t) => t.node_id === fx.first.nodeId)?.liveness === "alive" ? true : undefined,
      "the first node alive",
    );
    const sampler = sample(NAME);

    // The node goes silent: connections and handshakes complete, requests are taken, nothing is answered.
    const hold = fx.proxy.holdAllRequests();
    stops.push(() => hold.release());
    const suspect = await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "suspect"),
      "the silent node alerted suspect",
      30_000,
    );
    expect(hold.held(), "requests were taken (the handshake completed) and never answered").toBeGreaterThan(0);
    expect(suspect.unreachable_since_ms).not.toBeNull();
    await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "dead"),
      "the silent node alerted dead",
      30_000,
    );

    // Its copy is stopped by the node itself once the lease lapsed (no renewal reaches it). The controller cannot
    // know that yet: every request it sent may still arrive and renew the lease, so the agent is held where it was —
    // not placed elsewhere — and never runs twice.
    await waitFor(
      () => (liveCopies(NAME).length === 0 ? true : undefined),
      "the node's lease to stop its copy",
      60_000,
    );
    expect(await ctl.store.events({ kind: "workload.migrate" })).toEqual([]);
    expect((await ctl.placements()).map((p) => [p.name, p.node_id, p.instance_id])).toEqual([
      [NAME, fx.first.nodeId, instanceId],
    ]);
    expect(sampler.twice, "two live copies at once").toBeNull();

    // It answers again: alive, said so; the loop starts the copy its lease stopped, on its node; one copy in all.
    hold.release();
    await waitFor(
      () => changes.find((c) => c.node === fx.first.nodeId && c.to === "alive"),
      "the node alerted alive again",
      60_000,
    );
    const back = await waitFor(
      () => liveCopies(NAME).find((c) => c.node === fx.first.nodeId),
      "the agent running on its node again",
      60_000,
    );
    expect(back.instance).toBe(instanceId);
    sampler.stop();
    expect(sampler.twice, "two live copies at once").toBeNull();
    expect(liveCopies(NAME)).toEqual([back]);
    expect((await ctl.store.chain.verifyStored()).ok).toBe(true);
  });
});

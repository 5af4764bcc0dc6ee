/**
 * A finding of the network world (issue 37), made deterministic: seed 2 of `bash scripts/campaign --world net --seeds
 * 1-2 --world-size 2 --controllers 2` (PostgreSQL restarted while a `berth deploy` through the leader was placing).
 *
 * The leader sent `place`; the node started the instance; PostgreSQL was restarted (fast shutdown: every connection
 * terminated) before the leader committed the answer. The API answered 500, and from then on:
 * - the decision stays `dispatching` (node_id null) while its server lives — nothing settles it, and
 *   `berth unsettled --settle` does not list it;
 * - the instance runs on the node and the controller records no placement of it (spec/mesh.md I2: "no orphan after
 *   settle … until then the decision is listed as unsettled");
 * - `berth deploy` of the name answers `unchanged … is running as <that instance>; nothing to do`.
 *
 * Here the answer to `place` is held at the proxy until the instance runs, the leader's database link is held while
 * the answer goes through (so the leader is inside its commit) and PostgreSQL restarts then, so the order is the
 * campaign's every time. Fixed (dispatch.ts `handOver`, store.ts `handOverInterrupted`): the owner hands the decision to
 * the lost-answer path once the store answers again (unsettled on that node), the API answers 503 `store_interrupted`
 * (retryable), and settle adopts the copy. On main before the fix: 500 `internal`, the decision left `dispatching`.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { cleanup, waitFor } from "../../mesh/harness.js";
import { HaWorld, sharedPostgres, stopPostgres } from "../../mesh-controller/support/ha-world.js";
import { liveInstances } from "../../support/live-agents.js";
import { killAll, runNode } from "../../support/process.js";
import { MAIN } from "../../mesh/harness.js";

const TTL_MS = 3_000;
let world: HaWorld | null = null;

afterEach(async () => {
  await world?.close();
  world = null;
  killAll();
  await cleanup();
});
afterAll(async () => {
  await stopPostgres();
});

describe("the network world's finding: PostgreSQL restarted between a node's place answer and the leader's commit", {
  timeout: 180_000,
}, () => {
  it("the copy the node started ends recorded (adopted) or undone, and the decision does not stay dispatching", async () => {
    world = await HaWorld.create("postgres", { ttlMs: TTL_MS });
    const w = world;
    await w.serve();
    await w.serve();
    const leader = await waitFor(async () => (await w.leader()) ?? undefined, "a leader", 30_000);
    const added = await w.api(leader, "POST", "/nodes", { addr: w.nodeProxy.address, tier: "paired" });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const name = `pgmid${process.pid}`;

    w.nodeProxy.delayNextAnswer("place");
    const placing = w
      .api(leader, "POST", "/placements", { package: w.home.pkgDir, name })
      .catch((e: Error) => ({ status: 0, body: { error: e.message } }));
    await waitFor(
      async () => (w.nodeProxy.delayed > 0 ? true : undefined),
      "the node answered the place (held by the proxy)",
      30_000,
    );
    await waitFor(async () => (liveInstances(name).length > 0 ? true : undefined), "the instance runs");
    // The leader's connection is held (a partition of its database link), the answer let through so the leader is in
    // its commit when PostgreSQL restarts (fast shutdown terminates that connection), then the link heals.
    leader.dbTap?.partition();
    w.nodeProxy.releaseDelayed();
    await new Promise((r) => setTimeout(r, 300));
    await (await sharedPostgres()).restart();
    leader.dbTap?.heal();
    const answer = await placing;
    process.stdout.write(`place answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}\n`);
    // A retryable answer that says what happened, never a bare 500.
    expect(answer.status, JSON.stringify(answer.body)).toBe(503);
    expect((answer.body as { error?: { code?: string } }).error?.code).toBe("store_interrupted");

    // The user settles what is open, as the campaign did; then berth has TTL-scale time to make it whole.
    const settle = await runNode([MAIN, "unsettled", "--settle", "--json"], {
      env: { ...w.envFor(w.home.home), BERTH_LEADER_TTL_MS: String(TTL_MS) },
    });
    process.stdout.write(`settle: ${settle.code} ${settle.stdout.slice(0, 300)}\n`);
    const whole = await waitFor(
      async () => {
        const decisions = await w.rows<{ state: string }>("SELECT state FROM mesh_decisions WHERE name = ?", [name]);
        const placed = await w.rows<{ instance_id: string }>("SELECT instance_id FROM mesh_placements WHERE name = ?", [
          name,
        ]);
        const live = liveInstances(name);
        const recorded =
          live.length === 0 || (live.length === 1 && placed.map((p) => p.instance_id).join() === live.join());
        return recorded && !decisions.some((d) => d.state === "dispatching") ? { decisions, placed, live } : undefined;
      },
      "the live copy recorded (or undone) and no decision left dispatching",
      30_000,
    ).catch(async (e: Error) => {
      const decisions = await w.rows<Record<string, unknown>>(
        "SELECT id, state, node_id FROM mesh_decisions WHERE name = ?",
        [name],
      );
      throw new Error(
        `${e.message}: decisions ${JSON.stringify(decisions)}, live ${JSON.stringify(liveInstances(name))}`,
      );
    });
    expect(whole.live.length).toBeLessThanOrEqual(1);
  });
});

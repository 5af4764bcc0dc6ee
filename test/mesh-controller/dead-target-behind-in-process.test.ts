/**
 * Issue 35: a target this controller process has found silent for `dead_after`, and again within the facts' reuse
 * window, is described behind a placement, not in front of it (src/mesh/controller/targets.ts `refreshStale`). The
 * engine places nothing on a dead node; waiting for its describe held every placement, and every move off it, for the
 * whole describe timeout when the node hangs (takes connections, answers nothing) instead of refusing them. Real node
 * daemons behind the in-process connector; the hang is the fault connector's (a connect that waits for its deadline).
 */
import { afterEach, describe, expect, it } from "vitest";
import { type HostNode, type SeedFixture, seedFixture, waitFor } from "./support/in-process.js";

/** Long beside a placement (well under a second here), short enough that closing waits little for the one behind. */
const DESCRIBE_MS = 15_000;

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

describe("a placement while a known node is dead and hangs", () => {
  it("is made without waiting for the dead node's describe, which goes on behind it", async () => {
    fx = await seedFixture({
      controllerOptions: { deadAfterMs: 1_000, timeouts: { callMs: 5_000, placeMs: 10_000, describeMs: DESCRIBE_MS } },
    });
    const f = fx;
    const [first, second] = f.nodes as [HostNode, HostNode];
    expect((await f.controller.addTarget(first.addr, "paired")).ok).toBe(true);
    expect((await f.controller.addTarget(second.addr, "paired")).ok).toBe(true);

    // The second node stops answering: its contacts fail (at once, refused) for longer than dead_after.
    f.faults.cut(second.addr);
    await f.controller.watchTargets();
    const silentFrom = Date.now();
    await waitFor(() => Date.now() - silentFrom > 1_200, "dead_after to pass");
    await f.controller.watchTargets();
    // Now it hangs: a connect waits for its caller's deadline (15 s for a describe here).
    f.faults.hang(second.addr);
    const report = await f.controller.place({ package: f.pkgDir, name: "behind", config: { mode: "service" } });
    const placedAt = Date.now();
    expect(report.placed?.node_id, report.explain).toBe(first.id);
    expect(report.decision.candidates.find((c) => c.node_id === second.id)?.eligible).toBe(false);
    // No describe of the hung node ended (each waits out its 15 s) before the placement was made: none was waited for.
    expect(f.faults.hungEnded.filter((e) => e.at <= placedAt)).toEqual([]);
    expect((await f.controller.store.chain.verifyStored()).ok).toBe(true);
  });
});

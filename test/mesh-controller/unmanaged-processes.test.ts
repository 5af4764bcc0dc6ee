/**
 * A verb can always act on what a node holds (issue 21 item 3): an instance a node lists but no placement records
 * (the orphan of case 1 on main, or one another store placed) is found on its node and stopped or unloaded, chained
 * as an operator action with who asked, never refused as "no placed instance".
 */
import { afterEach, describe, expect, it } from "vitest";
import { processesWithEnv, waitFor } from "../mesh/harness.js";
import { killAll } from "../support/process.js";
import { cleanupProcesses, processFixture } from "./support/processes.js";

afterEach(async () => {
  killAll();
  await cleanupProcesses();
});

describe("verbs on an instance no placement records", () => {
  it("stop and unload of an orphan a node lists reach its node, are chained as operator actions, and end its processes", async () => {
    const fx = await processFixture();
    for (const addr of [fx.first.address, fx.second.address])
      expect((await fx.controller.addTarget(addr, "paired")).ok).toBe(true);
    const placed = (await fx.controller.place({ package: fx.pkgDir })).placed;
    expect(placed).not.toBeNull();
    const id = placed!.instance_id;
    // The orphan: the node runs it, the store does not record it (main's case 1 left exactly this).
    await fx.controller.store.engine.transaction((tx) =>
      tx.run("DELETE FROM mesh_placements WHERE instance_id = ?", [id]),
    );
    const c = await fx.reopen();
    expect(await c.placements()).toEqual([]);
    const operator = { user: "tester", uid: 1000, pid: process.pid, host: "here", via: "test" };

    const stopped = await c.instance("stop", id, { grace_ms: 500, operator });
    expect(stopped, JSON.stringify(stopped)).toMatchObject({ kind: "ok", node: placed!.node_id });
    const unloaded = await c.instance("unload", id, { operator });
    expect(unloaded, JSON.stringify(unloaded)).toMatchObject({ kind: "ok", node: placed!.node_id });
    await waitFor(
      () => processesWithEnv(`BERTH_INSTANCE_ID=${id}`).length === 0,
      "the orphan's processes to end",
      30_000,
    );
    const node = placed!.node_id === fx.first.nodeId ? fx.first : fx.second;
    expect((await fx.instances(node)).map((r) => r.instance_id)).not.toContain(id);

    const requests = async (kind: string) =>
      (await c.store.events({ kind, phase: "request" })).filter((e) => e.instance_id === id);
    for (const kind of ["workload.stop", "workload.unload"]) {
      expect(
        (await requests(kind)).map((e) => [e.unmanaged, (e.operator as { user?: string }).user]),
        kind,
      ).toEqual([[true, "tester"]]);
    }
    const gone = await c.instance("unload", id, { operator });
    expect(gone).toMatchObject({
      kind: "error",
      code: "unknown_instance",
      reason: expect.stringContaining("no known node lists it"),
    });
    expect((await c.store.chain.verifyStored()).ok).toBe(true);
  }, 120_000);
});

/**
 * Crash faults with real processes (spec/mesh.md §18.3): a controller process SIGKILLed at three points of a placement,
 * and a node daemon SIGKILLed while it holds an answer the controller has not seen. After each restart nothing is
 * duplicated and nothing is orphaned: the decision ends unplaced, or unsettled and then adopted or released.
 * Invariants: I1, I2, I3, I7.
 */
import { databaseEnv } from "../support/test-database.js";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { saveKeyFile } from "../../src/keys/key-file.js";
import { processesWithEnv, waitFor } from "../mesh/harness.js";
import { builtPath } from "../support/built.js";
import { killAll, spawnNode } from "../support/process.js";
import { cleanupProcesses, type ProcessFixture, processFixture, startMarker } from "./support/processes.js";

afterEach(async () => {
  killAll();
  await cleanupProcesses();
});

async function total(fx: ProcessFixture): Promise<number> {
  return (await fx.instances(fx.first)).length + (await fx.instances(fx.second)).length;
}

async function crashedPlacement(fx: ProcessFixture, crashAt: string): Promise<void> {
  const keyFile = join(fx.controllerDir, "..", "controller.key");
  saveKeyFile(keyFile, fx.key);
  await fx.controller.close();
  const worker = spawnNode(
    [
      builtPath("test/mesh-controller/support/place-worker.js"),
      fx.controllerDir,
      keyFile,
      fx.pkgDir,
      crashAt,
      fx.first.address,
      fx.second.address,
    ],
    { env: databaseEnv(fx.database) },
  );
  const exit = await worker.exited();
  expect(
    exit.signal,
    `the worker should have been killed at ${crashAt}; stdout ${worker.output()} stderr ${worker.errors()}`,
  ).toBe("SIGKILL");
}

describe("controller and node crashes with real processes (I1, I2, I3, I7)", () => {
  it("a controller killed after chaining the decision restarts with the decision unplaced, an interrupted event, no instance and the name free", async () => {
    const fx = await processFixture();
    await crashedPlacement(fx, "after-decision");
    const c = await fx.reopen();
    const interrupted = (await c.store.events({ kind: "workload.refuse" })).filter((e) => e.phase === "interrupted");
    expect(interrupted.map((e) => e.reason)).toEqual(["controller restarted before dispatch"]);
    await c.start();
    expect(await c.unsettled()).toHaveLength(0);
    expect(await total(fx)).toBe(0);
    const again = await c.place({ package: fx.pkgDir });
    expect(again.placed).not.toBeNull();
    expect(await total(fx)).toBe(1);
    expect((await c.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a controller killed right after sending the place restarts with the decision unsettled and settles it without a second instance", async () => {
    const fx = await processFixture();
    await crashedPlacement(fx, "after-send");
    const c = await fx.reopen();
    expect(await c.unsettled()).toHaveLength(1);
    const report = await c.start();
    expect(report.adopted + report.settledEmpty).toBe(1);
    expect(await c.unsettled()).toHaveLength(0);
    expect(await total(fx)).toBe(report.adopted);
    expect(await c.placements()).toHaveLength(report.adopted);
    expect((await c.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a controller killed before it read the place answer restarts unsettled and adopts the one instance the node holds", async () => {
    const fx = await processFixture();
    await crashedPlacement(fx, "before-answer");
    const c = await fx.reopen();
    const [unsettled] = await c.unsettled();
    expect(unsettled).toBeDefined();
    const report = await c.start();
    expect(report.adopted).toBe(1);
    expect(await total(fx)).toBe(1);
    expect((await c.placements()).map((p) => [p.decision_id, p.adopted])).toEqual([[unsettled?.decision_id, true]]);
    expect(processesWithEnv(`BERTH_DECISION_ID=${unsettled?.decision_id}`).length).toBeGreaterThan(0);
    expect((await c.store.chain.verifyStored()).ok).toBe(true);
  });

  it("a node daemon killed while its place answer is held back leaves the decision unsettled; after the node restarts the re-adopted process is adopted unchanged", async () => {
    const fx = await processFixture();
    for (const addr of [fx.proxy.address, fx.second.address])
      expect((await fx.controller.addTarget(addr, "paired")).ok).toBe(true);
    fx.proxy.holdNextPlaceAnswer();
    const placing = fx.controller.place({ package: fx.pkgDir, prefer: [fx.first.nodeId] });
    const held = await waitFor(
      async () => {
        if (fx.proxy.held !== 1) return false;
        const rows = await fx.instances(fx.first);
        return rows.length === 1 ? rows[0] : false;
      },
      "the node to hold the instance whose answer is held back",
      30_000,
    );
    const pid = held.pid as number;
    const marker = startMarker(pid);
    await fx.first.kill9();
    const r = await placing;
    expect(
      r.attempts.map((a) => a.outcome),
      r.explain,
    ).toEqual(["indeterminate"]);
    expect(r.attempts[0]?.reason).toContain("not reconciled");
    expect(r.unsettled).toBe(true);
    expect(await fx.instances(fx.second), "no duplicate").toHaveLength(0);

    await fx.first.start();
    fx.proxy.retarget(fx.first.address);
    expect(await fx.controller.settleUnsettled()).toBe(1);
    const rec = (await fx.controller.placements())[0];
    expect([rec?.node_id, rec?.decision_id, rec?.instance_id]).toEqual([
      fx.first.nodeId,
      r.decision_id,
      held.instance_id,
    ]);
    const st = await fx.controller.instance("status", String(held.instance_id));
    expect(st.kind === "ok" ? st.result.status : null).toMatchObject({ state: "running", pid });
    expect(startMarker(pid), "never restarted").toBe(marker);
    expect((await fx.controller.instance("unload", String(held.instance_id))).kind).toBe("ok");
    expect(await total(fx)).toBe(0);
  });
});

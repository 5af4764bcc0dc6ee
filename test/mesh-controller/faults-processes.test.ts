/**
 * Further faults over real TCP with real node daemons (spec/mesh.md §18.3): a place answer that arrives only after the
 * controller's timeout, a different key answering at a known address, and a controller whose key the nodes have not
 * authorised. Invariants: I1, I4.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { cleanupProcesses, processFixture, TIMEOUTS } from "./support/processes.js";

afterEach(cleanupProcesses);

describe("further faults with real processes", () => {
  it("a place answer held past the timeout is indeterminate, reconciled on that daemon, and exactly one instance results", async () => {
    const fx = await processFixture();
    const c = await fx.reopen({ timeouts: { ...TIMEOUTS, placeMs: 4_000 } });
    for (const addr of [fx.proxy.address, fx.second.address]) expect((await c.addTarget(addr, "paired")).ok).toBe(true);
    fx.proxy.holdNextPlaceAnswer();
    const r = await c.place({ package: fx.pkgDir, prefer: [fx.first.nodeId] });
    expect(fx.proxy.held).toBe(1);
    expect(
      r.attempts.map((a) => a.outcome),
      r.explain,
    ).toEqual(["indeterminate", "placed"]);
    expect(r.attempts[0]?.reason).toContain("reconciled: unloaded 1 instance");
    expect(await fx.instances(fx.first)).toHaveLength(0);
    expect(await fx.instances(fx.second)).toHaveLength(1);
  });

  it("a place answer with one flipped signature byte is no valid answer: indeterminate, reconciled, placed once elsewhere", async () => {
    const fx = await processFixture();
    for (const addr of [fx.proxy.address, fx.second.address])
      expect((await fx.controller.addTarget(addr, "paired")).ok).toBe(true);
    fx.proxy.corruptNextPlaceAnswer();
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [fx.first.nodeId] });
    expect(fx.proxy.corrupted).toBe(1);
    expect(
      r.attempts.map((a) => a.outcome),
      r.explain,
    ).toEqual(["indeterminate", "placed"]);
    expect(r.attempts[0]?.reason).toContain("signature");
    expect(r.attempts[0]?.reason).toContain("reconciled: unloaded 1 instance");
    expect((await fx.instances(fx.first)).length + (await fx.instances(fx.second)).length).toBe(1);
  });

  it("a different key answering at a known address is not learned: peer.key_refused once, nothing placed there", async () => {
    const fx = await processFixture();
    expect((await fx.controller.addTarget(fx.proxy.address, "paired")).ok).toBe(true);
    // The address now leads to another daemon, with another key.
    fx.proxy.retarget(fx.second.address);
    const r = await fx.controller.place({ package: fx.pkgDir });
    expect(r.placed).toBeNull();
    expect(r.decision.candidates.map((x) => x.node_id)).toEqual([fx.first.nodeId]);
    const refused = await fx.controller.store.events({ kind: "peer.key_refused" });
    expect(refused.map((e) => e.offered_key)).toEqual([fx.second.publicKey]);
    expect((await fx.controller.addTarget(fx.proxy.address, "paired")).ok, "no second trust on first use").toBe(false);
    expect(await fx.instances(fx.second)).toHaveLength(0);
  });

  it("a controller whose key a daemon has not authorised is cut at the TLS handshake, chained unauthorized by the node, and learns nothing", async () => {
    const fx = await processFixture();
    const strangerKey = generateSigningKey();
    const stranger = await MeshController.open({
      dataDir: join(fx.controllerDir, "..", "stranger"),
      key: strangerKey,
      connector: new ControllerConnector({ identity: strangerKey, connectTimeoutMs: 2_000 }),
      timeouts: TIMEOUTS,
    });
    try {
      const r = await stranger.addTarget(fx.second.address, "paired");
      expect(r.ok ? "" : r.error).toContain("the target was not learned");
      expect(await stranger.targets()).toHaveLength(0);
      expect(fx.second.events({ kind: "workload.refuse" }).some((e) => e.payload.code === "unauthorized")).toBe(true);
    } finally {
      await stranger.close();
    }
  });
});

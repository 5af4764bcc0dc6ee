/**
 * Targets and trust (spec/mesh.md §3.3–§3.5, §8.2) in process: trust on first use happens once per address, a new key at a
 * known address gets nothing, tiers come from the operator (API or peers file, re-read on every use), an unreadable
 * peers file demotes everyone, demoted targets stay usable for teardown, and an unauthorised controller is refused.
 */
import { PostgresEngine } from "../../src/store/postgres-engine.js";
import { rmSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { MeshController } from "../../src/mesh/controller/index.js";
import { controllerEvents, instancesOn, nodeKeyOf, type SeedFixture, seedFixture } from "./support/in-process.js";
import { writeJson } from "./support/package.js";

let fx: SeedFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

const nodesOf = (f: SeedFixture) => f.nodes as [SeedFixture["nodes"][0] & object, SeedFixture["nodes"][0] & object];

describe("targets and trust", () => {
  it("learns a key on the first describe only, and refuses a new key at the same address with one peer.key_refused per offered key", async () => {
    fx = await seedFixture();
    const [first, second] = nodesOf(fx);
    const added = await fx.controller.addTarget(first.addr, "paired");
    expect(added.ok && added.value.node_id).toBe(first.id);
    expect((await controllerEvents(fx.controller, "peer.add")).map((e) => e.how)).toEqual(["tofu"]);

    // Another node (another key) now answers at the first node's address.
    fx.memory.register(first.name, (stream) => void second.daemon.service.serve(stream));
    await fx.controller.refreshTargets();
    await fx.controller.refreshTargets();
    const t = (await fx.controller.targets())[0];
    expect(t?.node_id).toBe(first.id);
    expect(t?.liveness).not.toBe("alive");
    const refused = await controllerEvents(fx.controller, "peer.key_refused");
    expect(refused).toHaveLength(1);
    expect(refused[0]?.offered_key).toBe(nodeKeyOf(second));
    expect(refused[0]?.expected_key).toBe(added.ok ? added.value.key : null);

    // Adding the address again is not a second first use.
    const again = await fx.controller.addTarget(first.addr, "paired");
    expect(again.ok).toBe(false);
    expect(await controllerEvents(fx.controller, "peer.add")).toHaveLength(1);
    // Nothing is placed on a target whose key does not answer.
    const r = await fx.controller.place({ package: fx.pkgDir });
    expect(r.placed).toBeNull();
    expect(r.decision.candidates[0]?.rejections.map((x) => x.constraint)).toContain("liveness");
  });

  it("listing a new key for an address demotes the old key at once, chained once: it wins no placement while the new key has not answered (issue 12)", async () => {
    fx = await seedFixture();
    const [first, second] = nodesOf(fx);
    const peers = join(fx.controllerDir, "peers.json");
    writeJson(peers, [
      { addr: first.addr, tier: "paired" },
      { addr: second.addr, tier: "paired" },
    ]);
    await fx.controller.refreshTargets();
    const oldKey = (await fx.controller.targets()).find((t) => t.addr === first.addr)?.key;
    expect(oldKey).toBe(nodeKeyOf(first));

    const rotated = generateSigningKey().publicKey;
    writeJson(peers, [
      { addr: first.addr, tier: "paired", key: rotated },
      { addr: second.addr, tier: "paired" },
    ]);
    const r = await fx.controller.place({ package: fx.pkgDir, prefer: [first.id] });
    expect(r.placed?.node_id, "the old key at the address is trusted with nothing").toBe(second.id);
    const firstTarget = (await fx.controller.targets()).find((t) => t.addr === first.addr);
    expect([firstTarget?.key, firstTarget?.tier]).toEqual([oldKey, "discovered"]);
    await fx.controller.refreshTargets();
    expect(await controllerEvents(fx.controller, "peer.key_demoted")).toEqual([
      { node: first.id, addr: first.addr, old_key: oldKey, listed_key: rotated, from: "paired", to: "discovered" },
    ]);
    expect((await controllerEvents(fx.controller, "peer.add")).filter((e) => e.key === rotated)).toEqual([]);
    rmSync(peers);
  });

  it("takes tiers from the peers file on every use, demotes a target the file drops, and demotes everyone while the file is unreadable", async () => {
    fx = await seedFixture();
    const [first, second] = nodesOf(fx);
    await fx.controller.addTarget(first.addr);
    await fx.controller.addTarget(second.addr);
    const tiers = async () => Object.fromEntries((await fx!.controller.targets()).map((t) => [t.node_id, t.tier]));
    expect(await tiers()).toEqual({ [first.id]: "discovered", [second.id]: "discovered" });

    const peers = join(fx.controllerDir, "peers.json");
    writeJson(peers, [{ addr: first.addr, tier: "pinned" }, { addr: second.addr }]);
    expect(await tiers()).toEqual({ [first.id]: "pinned", [second.id]: "paired" });

    writeJson(peers, [{ addr: second.addr, tier: "paired" }]);
    expect(await tiers()).toEqual({ [first.id]: "discovered", [second.id]: "paired" });

    writeFileSync(peers, "{ not json");
    expect(await tiers()).toEqual({ [first.id]: "discovered", [second.id]: "discovered" });
    expect(await controllerEvents(fx.controller, "peer.demote_all")).toHaveLength(1);
    expect(
      (await controllerEvents(fx.controller, "policy.load")).some((e) => e.file === "peers.json" && e.ok === false),
    ).toBe(true);
    const denied = await fx.controller.place({ package: fx.pkgDir });
    expect(denied.placed).toBeNull();
    expect(denied.decision.placement).toBeNull();

    writeJson(peers, [
      { addr: first.addr, tier: "paired" },
      { addr: second.addr, tier: "paired" },
    ]);
    expect(await tiers()).toEqual({ [first.id]: "paired", [second.id]: "paired" });
    expect((await controllerEvents(fx.controller, "peer.tier")).length).toBeGreaterThan(0);
    rmSync(peers);
  });

  it("keeps a demoted target so its instance can still be stopped and unloaded through the controller", async () => {
    fx = await seedFixture();
    const [first] = nodesOf(fx);
    await fx.controller.addTarget(first.addr, "paired");
    const r = await fx.controller.place({ package: fx.pkgDir });
    expect(r.placed?.node_id).toBe(first.id);
    expect(await fx.controller.setTier(first.id, "discovered")).toBe(true);
    expect((await fx.controller.instance("stop", r.placed!.instance_id)).kind).toBe("ok");
    expect(
      (await fx.controller.instance("start", r.placed!.instance_id)).kind,
      "start is gated: a discovered node runs nothing",
    ).toBe("error");
    expect((await fx.controller.instance("unload", r.placed!.instance_id)).kind).toBe("ok");
    expect(await instancesOn(first, fx.key, fx.memory)).toHaveLength(0);
  });

  it("is refused by a node that has not authorised its key, and learns nothing", async () => {
    fx = await seedFixture();
    const [first] = nodesOf(fx);
    const stranger = await MeshController.open({
      dataDir: join(fx.root, "stranger"),
      key: generateSigningKey(),
      connector: fx.memory,
    });
    try {
      const r = await stranger.addTarget(first.addr, "paired");
      expect(r.ok).toBe(false);
      expect(r.ok ? "" : r.error).toContain("unauthorized");
      expect(await stranger.targets()).toHaveLength(0);
    } finally {
      await stranger.close();
    }
  });

  it("records a policy file once per change, however many processes open the controller and read it", async () => {
    fx = await seedFixture();
    const loads = async () => (await controllerEvents(fx!.controller, "policy.load")).map((e) => `${e.file}:${e.ok}`);
    await fx.controller.targets();
    const first = await loads();
    expect(first).toContain("signers.json:true");
    // A second process (here: a reopened controller, as every CLI call is) reads the same files: nothing new to record.
    fx.controller = await fx.reopen();
    await fx.controller.targets();
    await fx.controller.targets();
    expect(await loads()).toEqual(first);
    // A real change is recorded once, by whichever opener sees it first; the next opener finds it already recorded.
    writeFileSync(join(fx.controllerDir, "signers.json"), "not json");
    await fx.controller.targets();
    fx.controller = await fx.reopen();
    await fx.controller.targets();
    expect(await loads()).toEqual([...first, "signers.json:false"]);
  });

  it("refuses to open on a controller chain that fails its start-up check, naming the seq", async () => {
    fx = await seedFixture();
    await fx.controller.targets();
    await fx.controller.close();
    if (fx.database) {
      // PostgreSQL: the same tampering, as someone holding the database's owner role would do it.
      const raw = await PostgresEngine.open(fx.database);
      await raw.transaction(async (tx) => {
        await tx.exec("ALTER TABLE audit_event DISABLE TRIGGER audit_event_append_only");
        await tx.run("UPDATE audit_event SET payload = replace(payload, '\"ok\":true', '\"ok\":false') WHERE seq = 1");
      });
      await raw.close();
    } else {
      const raw = new Database(join(fx.controllerDir, "controller.db"));
      raw.exec("DROP TRIGGER audit_event_no_update");
      raw
        .prepare("UPDATE audit_event SET payload = replace(payload, '\"ok\":true', '\"ok\":false') WHERE seq = 1")
        .run();
      raw.close();
    }
    await expect(fx!.reopen()).rejects.toThrow(/does not verify at seq 1 \(payload_hash/);
  });
});

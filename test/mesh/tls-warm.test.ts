/**
 * Issue 17, keeping connections warm: with the controller's connector, a describe, the place after it and the reads
 * that follow share one TLS handshake with a real daemon (counted at a tap in front of it); a warm connection the
 * node closed meanwhile (a daemon restart) costs a read nothing but a fresh connection, and a mutating call never
 * reuses a connection idle for longer than two seconds.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../src/keys/key-file.js";
import { ControllerConnector } from "../../src/mesh/client/connector.js";
import { NodeClient, type TargetRef } from "../../src/mesh/client/node-client.js";
import { PackageDirSource } from "../../src/mesh/client/package-source.js";
import { type ChannelTap, channelTap } from "../hostile/channel-tap.js";
import { ALLOW_ALL, cleanup, makePackage, NodeProcess, ok, requireBuild } from "./harness.js";

const taps: ChannelTap[] = [];
afterEach(() => {
  for (const t of taps.splice(0)) t.close();
});
afterAll(cleanup);

describe("warm control connections", () => {
  it("a describe, a place and three reads share one handshake; after a daemon restart a read reconnects and answers", async () => {
    requireBuild();
    const controller = generateSigningKey();
    const signer = generateSigningKey();
    const node = await NodeProcess.create({
      controllers: [controller.publicKey],
      signers: [signer.publicKey],
      permits: ALLOW_ALL,
    });
    const wire = await channelTap(node.address);
    taps.push(wire);
    let now = Date.now();
    const connector = new ControllerConnector({ identity: controller, clock: () => now });
    const client = new NodeClient({
      key: controller,
      connector,
      timeoutMs: 15_000,
      authority: () => ({ store_id: "b".repeat(32), epoch: 0 }),
    });
    const described = await client.describe(wire.address, null);
    expect(described.kind).toBe("described");
    const target: TargetRef = { ...node.target(), addr: wire.address };
    const source = new PackageDirSource(makePackage(signer).dir);
    ok(
      await client.call(
        target,
        "place",
        {
          package_id: source.packageId,
          name: "warm",
          variant: "any-linux",
          config: { mode: "service", args: [], env: {} },
        },
        {
          decisionId: randomBytes(32).toString("hex"),
          package: source,
        },
      ),
    );
    for (let i = 0; i < 3; i++) ok(await client.call(target, "status", { instance_id: null, include_departed: false }));
    expect(wire.connections(), "one connection (one handshake) for five calls").toBe(1);

    // A mutating call does not take a connection idle for more than two seconds: a fresh one, nothing lost.
    now += 3_000;
    const rows = ok(await client.call(target, "status", { instance_id: null, include_departed: false })).rows as Array<{
      instance_id?: string;
    }>;
    const instanceId = rows.find((r) => typeof r.instance_id === "string")?.instance_id as string;
    now += 3_000;
    ok(await client.call(target, "stop", { instance_id: instanceId }, { decisionId: randomBytes(32).toString("hex") }));
    expect(wire.connections()).toBe(2);

    // The daemon restarts: the warm connection is dead; a read on it is asked again on a fresh connection.
    await node.kill9();
    await node.start(node.address);
    wire.retarget(node.address);
    const fresh = await client.describe(wire.address, node.publicKey, node.nodeId);
    expect(fresh.kind, JSON.stringify(fresh)).toBe("described");
    expect(wire.connections()).toBe(3);
    connector.closeWarm();
  }, 120_000);
});
